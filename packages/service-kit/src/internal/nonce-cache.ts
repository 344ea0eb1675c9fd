/**
 * Nonces seen within the replay window. A signed call is accepted at most once per process: its
 * nonce is remembered for twice the clock-skew window from arrival, which covers every moment its
 * timestamp could still pass the skew check. Arrival order is time order, so the oldest entries sit
 * at the front of the map and expire from there. Bounded: past `max` entries the oldest go first
 * (they are the closest to expiring anyway).
 */
export class NonceCache {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly max = 1_000_000,
  ) {}

  /** True the first time a nonce is offered within its lifetime, false for a replay. */
  admit(nonce: string, now = Date.now()): boolean {
    this.expire(now);
    if (this.seen.has(nonce)) return false;
    if (this.seen.size >= this.max) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    this.seen.set(nonce, now + this.ttlMs);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  private expire(now: number): void {
    for (const [nonce, expiresAt] of this.seen) {
      if (expiresAt > now) return;
      this.seen.delete(nonce);
    }
  }
}
