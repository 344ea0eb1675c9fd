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

/**
 * PostgreSQL's refusals of a text value itself: 22021 (a NUL, or bytes that are not UTF-8) and 22P05 (a
 * character it cannot translate, e.g. `\u0000` in jsonb). The value came from the client: 400, not 500.
 */
const UNSTORABLE_TEXT = new Set(["22021", "22P05"]);

/**
 * The SQLSTATE behind an error: node-postgres puts it on `code`; Prisma's driver adapter wraps it in a
 * P2039 (model query) or P2010 ($queryRaw) with `meta.driverAdapterError.cause.originalCode`.
 */
export function isUnstorableText(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const o = e as { code?: unknown; originalCode?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } };
    const candidates = [o.code, o.originalCode, o.meta?.driverAdapterError?.cause?.originalCode];
    if (candidates.some((c) => typeof c === "string" && UNSTORABLE_TEXT.has(c))) return true;
  }
  return false;
}

/** The answer to a value `isUnstorableText` recognised. */
export function unstorableText(): AppError {
  return new AppError("invalid_request", "a text value holds a character the API cannot store");
}

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
      } else if (isUnstorableText(err)) {
        logger.warn({ err, requestId: req.requestId, path: req.path }, "a text value the database cannot store");
        appError = unstorableText();
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
