import type { IncomingHttpHeaders } from "node:http";
import { AppError } from "../app-error";

/**
 * Set on a service's answer when its door refused the caller's internal identity (unsigned, forged,
 * stale, replayed, a body other than the one signed, a caller it does not take). Such a refusal is
 * never the public client's fault: the gateway and the internal clients turn it into an internal
 * error instead of passing it on.
 */
export const INTERNAL_REFUSAL_HEADER = "x-meter-internal-refusal";

/**
 * The refusal as answered: the code and a message that says nothing about why (the reason is the
 * error's cause, which the error handler logs with the request id).
 */
export function internalRefusal(code: "authentication_required" | "insufficient_scope", reason: string): AppError {
  const message = code === "authentication_required" ? "internal authentication failed" : "this caller may not call this endpoint";
  return new AppError(code, message, { headers: { [INTERNAL_REFUSAL_HEADER]: "1" }, cause: new Error(reason) });
}

export function isInternalRefusal(headers: IncomingHttpHeaders | Headers): boolean {
  const value = headers instanceof Headers ? headers.get(INTERNAL_REFUSAL_HEADER) : headers[INTERNAL_REFUSAL_HEADER];
  return value !== null && value !== undefined;
}

/** A sibling service refused this process's signed call: a deployment fault, answered as internal_error. */
export class InternalRefusalError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "InternalRefusalError";
  }
}
