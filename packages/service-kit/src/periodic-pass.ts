import type { Logger } from "./logger";

export interface PeriodicPassOptions {
  /** What the pass does, for the logs ("reconciler pass"). */
  name: string;
  intervalMs: number;
  logger: Logger;
  /** Slower upkeep run at the start of a pass at most once per `everyMs` (purging history). */
  upkeep?: { everyMs: number; run: () => Promise<void> };
}

/**
 * A pass run every `intervalMs` that never overlaps itself (a slow pass makes the next tick a no-op
 * rather than a second pass over the same rows) and whose failure is logged and retried at the next
 * tick, never thrown into a timer. The timer does not keep the process alive. The reconcilers of every
 * service that owns holds run on it.
 */
export class PeriodicPass {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private lastUpkeep = 0;

  constructor(
    private readonly pass: () => Promise<number>,
    private readonly opts: PeriodicPassOptions,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.runOnce(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass now (tests call it); resolves with what the pass returned, 0 when it failed or one ran. */
  async runOnce(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      if (this.opts.upkeep && Date.now() - this.lastUpkeep >= this.opts.upkeep.everyMs) {
        this.lastUpkeep = Date.now();
        await this.opts.upkeep.run();
      }
      return await this.pass();
    } catch (e) {
      this.opts.logger.error({ err: e }, `${this.opts.name} failed; trying again at the next tick`);
      return 0;
    } finally {
      this.running = false;
    }
  }
}
