import type { ErrorRequestHandler } from "express";

/**
 * For routes that stream their request body. An error answered before the body was read closes the
 * connection instead of reading (possibly megabytes) only to drop them; a client that went away
 * mid-body gets no answer, as there is nobody to send it to.
 */
export const streamedBodyErrors: ErrorRequestHandler = (err, req, res, next) => {
  if (req.destroyed && !req.complete) {
    req.log.info({ err }, "request body abandoned by the client");
    return;
  }
  if (!req.complete) res.setHeader("connection", "close");
  next(err);
};
