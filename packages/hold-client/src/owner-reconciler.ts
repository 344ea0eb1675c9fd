import { PeriodicPass, type Logger } from "@meter/service-kit";

/** What an owner's reconciler does with its records; each step guarded in the store, so replicas may run side by side. */
export interface ReconcileSteps<R extends { id: string }> {
  /** Records nobody is moving on (parked past their time, their owner's lease run out), a batch at a time. */
  due(limit: number): Promise<R[]>;
  /** Takes one up (its next attempt, counted); false when another process got there first. */
  takeUp(record: R): Promise<boolean>;
  /** Runs after each pass (text: the allowances of stopped processes). */
  afterPass?(): Promise<void>;
  /** Drops final records past retention; resolves with how many. */
  purge(): Promise<number>;
}

export interface OwnerReconcilerOptions {
  intervalMs: number;
  batch?: number;
}

/** Purging history is slow upkeep, not every pass's work. */
const PURGE_EVERY_MS = 3_600_000;

/**
 * Every service that places holds finishes what its requests left: each pass takes up the records that
 * are due (one failing record never stops the others), and once an hour purges final records past
 * retention. Passes never overlap (PeriodicPass).
 */
export class OwnerReconciler<R extends { id: string }> {
  private readonly passes: PeriodicPass;

  constructor(
    private readonly steps: ReconcileSteps<R>,
    private readonly logger: Logger,
    private readonly opts: OwnerReconcilerOptions,
  ) {
    this.passes = new PeriodicPass(() => this.pass(), {
      name: "reconciler pass",
      intervalMs: opts.intervalMs,
      logger,
      upkeep: { everyMs: PURGE_EVERY_MS, run: () => this.purge() },
    });
  }

  start(): void {
    this.passes.start();
  }

  stop(): void {
    this.passes.stop();
  }

  /** One pass; resolves with how many records it took up. Exposed for tests. */
  tick(): Promise<number> {
    return this.passes.runOnce();
  }

  private async pass(): Promise<number> {
    let taken = 0;
    for (const record of await this.steps.due(this.opts.batch ?? 50)) {
      try {
        if (await this.steps.takeUp(record)) taken++;
      } catch (e) {
        this.logger.error({ err: e, record: record.id }, "could not take up a record; trying again next pass");
      }
    }
    await this.steps.afterPass?.();
    return taken;
  }

  private async purge(): Promise<void> {
    const purged = await this.steps.purge();
    if (purged) this.logger.info({ purged }, "purged final records past retention");
  }
}
