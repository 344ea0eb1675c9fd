/**
 * Counts requests in flight per name (a service, an API key id) and refuses one more past `max`, in this
 * process alone: the per-service bound, and the floor under a key's shared bound (redis-key-limits.ts).
 */
export class InFlightLimit {
  private readonly counts = new Map<string, number>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError("an in-flight limit must be an integer >= 1");
  }

  /** Admits one more request under `name`: a release to call when it is over (calling it again does nothing), or undefined when full. */
  tryAcquire(name: string): (() => void) | undefined {
    const current = this.counts.get(name) ?? 0;
    if (current >= this.max) return undefined;
    this.counts.set(name, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(name) ?? 1) - 1;
      if (left > 0) this.counts.set(name, left);
      else this.counts.delete(name);
    };
  }

  inFlight(name: string): number {
    return this.counts.get(name) ?? 0;
  }
}
