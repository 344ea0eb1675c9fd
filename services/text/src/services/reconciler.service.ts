import type { Logger } from "@meter/service-kit";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import type { TextRunner } from "./text-runner";

export interface ReconcilerOptions {
  workerId: string;
  intervalMs: number;
  /** A process whose heartbeat is older than this is taken for dead and its requests are taken over. */
  staleMs: number;
  /** How long an attempt the reconciler starts is left alone before it counts as abandoned. */
  leaseMs: number;
  retentionMs: number;
  batch?: number;
}

/**
 * Starts the next attempt of what nobody is driving: this process's parked requests once their
 * back-off has run out, and every unfinished request of a process that died (its heartbeat stopped).
 * Each is taken with a guarded update that also counts the attempt (one taker wins, and a record the
 * request path has just refused and deleted is simply not there), and driven by the runner.
 * The heartbeat has its own timer, so a slow pass never makes this process look dead.
 */
export class Reconciler {
  private timers: NodeJS.Timeout[] = [];
  private ticking = false;
  private lastPurge = 0;

  constructor(
    private readonly repo: TextRequestRepository,
    private readonly runner: TextRunner,
    private readonly logger: Logger,
    private readonly opts: ReconcilerOptions,
  ) {}

  async start(): Promise<void> {
    await this.repo.heartbeat(this.opts.workerId);
    const beat = setInterval(
      () => {
        this.repo.heartbeat(this.opts.workerId).catch((e: unknown) => this.logger.warn({ err: e }, "heartbeat not written"));
      },
      Math.max(100, Math.floor(this.opts.staleMs / 3)),
    );
    const tick = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timers = [beat, tick];
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.repo.retire(this.opts.workerId).catch(() => undefined);
  }

  /** One pass; returns how many records it took up. Exposed for tests. */
  async tick(): Promise<number> {
    if (this.ticking) return 0;
    this.ticking = true;
    try {
      await this.purgeHourly();
      const due = await this.repo.due(this.opts.workerId, this.opts.staleMs, this.opts.batch ?? 50);
      let taken = 0;
      for (const record of due) {
        if (this.runner.isActive(record.id)) continue;
        const mine = await this.repo.update(record, {
          ownerId: this.opts.workerId,
          attempts: record.attempts + 1,
          nextAttemptAt: new Date(Date.now() + this.opts.leaseMs),
        });
        if (!mine) continue;
        if (record.ownerId !== this.opts.workerId) {
          this.logger.warn({ request: record.id, previousOwner: record.ownerId }, "taking over a request of a stopped process");
        }
        taken++;
        this.runner.drive(mine).catch((e: unknown) => this.logger.error({ err: e, request: record.id }, "text attempt failed"));
      }
      return taken;
    } catch (e) {
      this.logger.error({ err: e }, "reconciler pass failed");
      return 0;
    } finally {
      this.ticking = false;
    }
  }

  private async purgeHourly(): Promise<void> {
    if (Date.now() - this.lastPurge < 3_600_000) return;
    this.lastPurge = Date.now();
    const purged = await this.repo.purge(this.opts.retentionMs);
    if (purged) this.logger.info({ purged }, "purged idempotency records past retention");
  }
}
