/**
 * A key's recent spend per second: estimates decayed exponentially with a one-second time constant, so
 * an allowance follows what the key spends now, not what it spent a minute ago.
 */
export class SpendRate {
  private value = 0;
  private at = 0;

  constructor(private readonly tauMs = 1_000) {}

  add(amount: number, now: number): void {
    this.value = this.decayed(now) + amount;
    this.at = now;
  }

  /** Microrubles per second. */
  perSecond(now: number): number {
    return (this.decayed(now) * 1_000) / this.tauMs;
  }

  private decayed(now: number): number {
    return this.value * Math.exp(-Math.max(0, now - this.at) / this.tauMs);
  }
}
