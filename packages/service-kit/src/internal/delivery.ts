import type { Dispatcher } from "undici";

/**
 * Whether a failed call could have reached the other side. Money depends on it: a hold whose request
 * was never delivered certainly does not exist, and an upstream call never delivered certainly cost
 * nothing; one whose answer was lost may have done either.
 */
export type Delivery = "not_delivered" | "unknown";

/** Failures that happen before a connection exists: name not resolved, no route, nothing listening. */
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "UND_ERR_CONNECT_TIMEOUT"]);

/**
 * The one rule for "was the request delivered?". Where the caller watched the request being handed
 * to a connected socket (`sent`, see trackSending), that decides; otherwise only an error that proves
 * no connection was ever made counts as not delivered. Anything else may have reached the other side.
 */
export function deliveryOf(error: unknown, sent?: boolean): Delivery {
  if (sent !== undefined) return sent ? "unknown" : "not_delivered";
  return neverConnected(error) ? "not_delivered" : "unknown";
}

function neverConnected(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.length > 0 && error.errors.every(neverConnected);
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && NEVER_CONNECTED.has(code)) return true;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause !== undefined && cause !== error && neverConnected(cause);
}

/**
 * An undici dispatcher that reports the moment a request is handed to a connected socket, right
 * before its first byte is written: the line between "not delivered" and "outcome unknown".
 */
export function trackSending(dispatcher: Dispatcher, onSent: () => void): Dispatcher {
  return dispatcher.compose((dispatch) => (opts, handler) => dispatch(opts, new SendTracker(handler, onSent)));
}

class SendTracker implements Dispatcher.DispatchHandler {
  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly onSent: () => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.onSent();
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler["onRequestUpgrade"]>>): void {
    this.inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler["onResponseStart"]>>): void {
    this.inner.onResponseStart?.(...args);
  }

  onResponseData(...args: Parameters<NonNullable<Dispatcher.DispatchHandler["onResponseData"]>>): void {
    this.inner.onResponseData?.(...args);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler["onResponseEnd"]>>): void {
    this.inner.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler["onResponseError"]>>): void {
    this.inner.onResponseError?.(...args);
  }
}
