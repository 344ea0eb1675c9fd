/**
 * At most `limit` requests per name in any `windowMs`, in this process: a log of the times of the
 * requests admitted (never more than `limit` per name), so there is no minute at whose start the count
 * resets. The shared limit (key-limits.ts) counts the same way in Redis; this is its per-process floor.
 */
export class SlidingWindow {
  private times = new Map<string, number[]>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Admits and records one request: 0, or the milliseconds until the oldest one leaves the window. */
  take(name: string, now = Date.now()): number {
    const times = this.recent(name, now);
    if (times.length >= this.limit) return Math.max(1, times[0]! + this.windowMs - now);
    times.push(now);
    return 0;
  }

  /** Records a request another counter admitted (the shared one), so this floor knows of it too. */
  record(name: string, now = Date.now()): void {
    const times = this.recent(name, now);
    times.push(now);
    if (times.length > this.limit) times.shift();
  }

  private recent(name: string, now: number): number[] {
    let times = this.times.get(name);
    if (!times) {
      // Keys seen once stay until their window is over; a flood of new keys must not grow it for ever.
      if (this.times.size > 100_000) this.prune(now);
      times = [];
      this.times.set(name, times);
    }
    while (times.length > 0 && times[0]! <= now - this.windowMs) times.shift();
    return times;
  }

  private prune(now: number): void {
    for (const [name, times] of this.times) if ((times.at(-1) ?? 0) <= now - this.windowMs) this.times.delete(name);
    if (this.times.size > 100_000) this.times = new Map();
  }
}
