import type { IncomingMessage } from "node:http";

/** How fast a request body must arrive (docs/api.md, Limits and overload). */
export interface BodyPace {
  /** A JSON body the gateway reads must have arrived whole this long after the reading began. */
  timeoutMs: number;
  /** Every window of `windowMs` a JSON body is awaited must bring this many bytes a second on average. */
  minBytesPerSecond: number;
  /** The same for upload content, streamed to the files service while it holds an in-flight place. */
  uploadMinBytesPerSecond: number;
  /** The window the rates are measured over; the first one is the grace a body has to get going. */
  windowMs: number;
}

export const DEFAULT_BODY_PACE: BodyPace = { timeoutMs: 10_000, minBytesPerSecond: 1024, uploadMinBytesPerSecond: 16 * 1024, windowMs: 5_000 };

export type TooSlow = "deadline" | "rate";

/**
 * Watches a request's body arrive and calls `tooSlow` once, when it has not all arrived `timeoutMs`
 * after this call (if given), or when a window of `windowMs` brought less than `minBytesPerSecond` on
 * average. A window in which the request was paused (the service it is streamed to reads slower than
 * the client sends) is not counted against the client: only time the gateway waited on it is. Stops by
 * itself when the body ends or the request goes away; the returned function stops it earlier.
 */
export function watchBodyPace(
  req: IncomingMessage,
  rule: { timeoutMs?: number; minBytesPerSecond: number; windowMs: number },
  tooSlow: (why: TooSlow) => void,
): () => void {
  const socket = req.socket;
  const declared = Number(req.headers["content-length"]);
  const start = socket.bytesRead;
  let counted = start;
  let pausedInWindow = req.isPaused();
  const onPause = (): void => {
    pausedInWindow = true;
  };
  const check = setInterval(() => {
    // A body with less left than a window's due owes only the rest (counted with framing: generous).
    const left = Number.isFinite(declared) ? Math.max(declared - (counted - start), 1) : Infinity;
    const owed = Math.min((rule.minBytesPerSecond * rule.windowMs) / 1000, left);
    const read = socket.bytesRead - counted;
    counted = socket.bytesRead;
    const paused = pausedInWindow || req.isPaused();
    pausedInWindow = req.isPaused();
    if (!paused && read < owed) fire("rate");
  }, rule.windowMs);
  const deadline = rule.timeoutMs === undefined ? undefined : setTimeout(() => fire("deadline"), rule.timeoutMs);
  const stop = (): void => {
    clearInterval(check);
    if (deadline) clearTimeout(deadline);
    req.off("pause", onPause);
    req.off("end", stop);
    req.off("close", stop);
  };
  const fire = (why: TooSlow): void => {
    stop();
    tooSlow(why);
  };
  req.on("pause", onPause);
  req.once("end", stop);
  req.once("close", stop);
  return stop;
}
