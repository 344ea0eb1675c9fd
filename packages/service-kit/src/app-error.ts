import { ErrorCatalog, type ErrorCode, errorTypeOf, type ErrorBody } from "@meter/contracts";

/**
 * The one exception type use-cases throw. It knows nothing of Express; the error middleware turns it
 * into the public error shape with the status the contract assigns to its code.
 */
export class AppError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    opts: { headers?: Record<string, string>; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AppError";
    this.status = ErrorCatalog[code];
    this.headers = opts.headers ?? {};
    this.details = opts.details;
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}

export function errorBody(code: string, message: string, status: number, requestId?: string): ErrorBody {
  return {
    type: "error",
    error: { code, message, type: errorTypeOf(status), ...(requestId ? { request_id: requestId } : {}) },
  };
}
