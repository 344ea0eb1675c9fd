import { InFlightLimit } from "./in-flight-limit";
import { SlidingWindow } from "./sliding-window";

/** The per-minute limit's window. */
export const RATE_WINDOW_MS = 60_000;
/** Seconds a client over its in-flight bound is asked to wait: places free up as fast as requests finish. */
export const IN_FLIGHT_RETRY_AFTER_S = 1;

export interface KeyLimitSettings {
  /** Requests of one key in flight at once (KEY_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** Requests of one key in any minute (RATE_LIMIT_PER_MINUTE); 0: not limited. */
  perMinute: number;
}

export type KeyAdmission =
  | { admitted: true; /** Frees the key's place once the answer is over; calling it again does nothing. */ release(): void }
  | { admitted: false; reason: "in_flight" | "rate"; retryAfterS: number };

/** A key's in-flight places and per-minute rate, as the admission step sees them, wherever they are counted. */
export interface KeyLimits {
  readonly maxInFlight: number;
  admit(keyId: string): Promise<KeyAdmission>;
  close(): void;
}

export function refusal(reason: "in_flight" | "rate", retryAfterMs: number): KeyAdmission {
  return { admitted: false, reason, retryAfterS: reason === "in_flight" ? IN_FLIGHT_RETRY_AFTER_S : Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * A key's limits counted in this process alone. The shared limits (redis-key-limits.ts) keep one always,
 * as a floor every process holds, and decide on it alone while Redis is unreachable; a test or a tool
 * without Redis can use it directly.
 */
export class LocalKeyLimits implements KeyLimits {
  readonly maxInFlight: number;
  readonly inFlight: InFlightLimit;
  readonly rate: SlidingWindow | undefined;

  constructor(settings: KeyLimitSettings) {
    this.inFlight = new InFlightLimit(settings.maxInFlight);
    this.maxInFlight = settings.maxInFlight;
    this.rate = settings.perMinute > 0 ? new SlidingWindow(settings.perMinute, RATE_WINDOW_MS) : undefined;
  }

  admit(keyId: string): Promise<KeyAdmission> {
    const release = this.inFlight.tryAcquire(keyId);
    if (!release) return Promise.resolve(refusal("in_flight", 0));
    const wait = this.rate?.take(keyId) ?? 0;
    if (wait > 0) {
      release();
      return Promise.resolve(refusal("rate", wait));
    }
    return Promise.resolve({ admitted: true, release });
  }

  close(): void {}
}
