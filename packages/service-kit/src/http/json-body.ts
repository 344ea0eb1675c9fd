import express, { type RequestHandler } from "express";
import { AppError } from "../app-error";

/**
 * JSON bodies only: a body of another type is 415, malformed JSON 400 `invalid_json`, and one over the
 * limit 413 (both mapped by the error middleware). An empty body is allowed and parses as `{}`.
 */
export function jsonBody(opts: { limit: number | string }): RequestHandler[] {
  const parse = express.json({ limit: opts.limit, type: () => true });
  const requireJsonType: RequestHandler = (req, _res, next) => {
    if (!hasBody(req.headers)) {
      req.body = {};
      return next();
    }
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json" && !type.endsWith("+json")) {
      return next(new AppError("unsupported_media_type", "the request body must be JSON (Content-Type: application/json)"));
    }
    next();
  };
  return [requireJsonType, parse];
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}
