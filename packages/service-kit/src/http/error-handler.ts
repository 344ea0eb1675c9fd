import type { ErrorRequestHandler, RequestHandler } from "express";
import type { ErrorCode } from "@meter/contracts";
import { AppError, errorBody } from "../app-error";
import { INTERNAL_REFUSAL_HEADER } from "../internal/internal-refusal";
import type { Logger } from "../logger";

/** Failures raised by Express's body parser, by their `type`. */
const BODY_PARSER_ERRORS: Record<string, ErrorCode> = {
  "entity.parse.failed": "invalid_json",
  "entity.too.large": "payload_too_large",
  "encoding.unsupported": "unsupported_media_type",
  "charset.unsupported": "unsupported_media_type",
  "entity.verify.failed": "invalid_request",
};

/**
 * Refusals that retrying the same call cannot change for hours. The official SDKs retry any 429 on
 * their own unless told not to; `x-should-retry: false` is the header both of them obey.
 */
const NOT_WORTH_RETRYING = new Set<string>(["daily_budget_exceeded"]);

export function sendError(res: Parameters<RequestHandler>[1], requestId: string | undefined, error: AppError): void {
  for (const [k, v] of Object.entries(error.headers)) res.setHeader(k, v);
  // Unless the refusal itself says when to come back (money parked in allowances, docs/api.md).
  if (NOT_WORTH_RETRYING.has(error.code) && !("retry-after" in error.headers)) res.setHeader("x-should-retry", "false");
  // Unavailable is always for now (contract): say when to come back, whoever raised it.
  if (error.status === 503 && !res.hasHeader("retry-after")) res.setHeader("retry-after", "2");
  res.status(error.status).json(errorBody(error.code, error.message, error.status, requestId));
}

export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => next(new AppError("not_found", `no route for ${req.method} ${req.path}`));
}

/** The one place an error becomes a response: the contract's shape, every time. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    let appError: AppError;
    if (err instanceof AppError) {
      appError = err;
      if (INTERNAL_REFUSAL_HEADER in err.headers) {
        logger.warn({ reason: (err.cause as Error | undefined)?.message, requestId: req.requestId, path: req.path }, "internal call refused");
      }
    } else {
      const type = (err as { type?: string }).type;
      const code = type ? BODY_PARSER_ERRORS[type] : undefined;
      if (code) {
        appError = new AppError(code, code === "payload_too_large" ? "the request body is too large" : (err as Error).message);
      } else if (type === "request.aborted") {
        return; // the client went away; there is nobody to answer
      } else if (err instanceof URIError) {
        // Express's router could not percent-decode a path parameter (`/v1/jobs/%ff`): the client's bytes.
        appError = new AppError("invalid_request", "the request path is not valid percent-encoded UTF-8");
      } else {
        logger.error({ err, requestId: req.requestId, path: req.path }, "unhandled error");
        appError = new AppError("internal_error", "internal error");
      }
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, req.requestId, appError);
  };
}
