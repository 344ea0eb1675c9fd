/** The per-key requests-per-minute limit as the routes see it, wherever it is counted. */
export interface KeyRateLimit {
  readonly enabled: boolean;
  /** Resolves 0 when admitted, else the seconds until the key's window reopens. */
  take(keyId: string): Promise<number>;
}

/** RATE_LIMIT_PER_MINUTE=0 (the default): nothing counted, Redis not needed. */
export const NO_RATE_LIMIT: KeyRateLimit = { enabled: false, take: () => Promise.resolve(0) };

/**
 * A per-key fixed-window counter in this process alone: what the shared limit falls back to while Redis
 * is unreachable (each replica then admits up to the limit). Off when the limit is 0.
 */
export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly perMinute: number) {}

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /** Returns 0 when admitted, else the seconds until the window reopens. */
  take(keyId: string, now = Date.now()): number {
    const start = now - (now % 60_000);
    let w = this.windows.get(keyId);
    if (!w || w.start !== start) {
      if (this.windows.size > 100_000) this.windows = new Map();
      w = { start, count: 0 };
      this.windows.set(keyId, w);
    }
    if (w.count >= this.perMinute) return Math.max(1, Math.ceil((start + 60_000 - now) / 1000));
    w.count++;
    return 0;
  }
}
