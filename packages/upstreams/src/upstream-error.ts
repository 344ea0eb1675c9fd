/**
 * How an upstream call failed, which decides what happens to the money:
 * - `not_sent`: the request never reached the upstream (connection refused, DNS): nothing ran.
 * - `rejected`: the upstream answered 4xx: it refused the request, nothing ran.
 * - `failed`: the upstream answered 5xx (or 429 overload): it did not complete the call; worth retrying.
 * - `unknown`: the request was sent and no answer came (timeout, connection dropped, unreadable body):
 *   the upstream may have run it and charged us.
 */
export type UpstreamFailureKind = "not_sent" | "rejected" | "failed" | "unknown";

export class UpstreamError extends Error {
  /** How long the upstream asked us to wait (its Retry-After), when it said. */
  readonly retryAfterMs?: number;
  /** The call ran out of its time (no connection, or no complete answer, within `timeoutMs`). */
  readonly timedOut: boolean;

  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown; retryAfterMs?: number; timedOut?: boolean },
  ) {
    super(message, options);
    this.name = "UpstreamError";
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    this.timedOut = options?.timedOut ?? false;
  }
}

/**
 * A failed upstream call as a client may be told of it: what kind of failure, never the upstream's own
 * words (they may carry our configuration). An upstream refusing our credentials is our configuration,
 * not the customer's business.
 */
export function describeUpstreamFailure(err: UpstreamError): string {
  if (err.status === 401 || err.status === 403) return "the upstream refused this service's credentials";
  if (err.status) return `the upstream answered ${err.status}`;
  if (err.kind === "unknown")
    return err.timedOut ? "the upstream did not answer in time" : "the connection to the upstream was lost after the request was sent";
  return "the upstream could not be reached";
}
