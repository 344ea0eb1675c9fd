/**
 * A per-key fixed-window counter, per gateway process (so N replicas admit up to N times the limit;
 * documented). Off when the limit is 0.
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
