import { OwnerReconciler } from "@meter/hold-client";
import type { Logger } from "@meter/service-kit";
import type { TextRecord } from "../domain/text-record";
import type { AllowanceRepository } from "../repositories/allowance.repository";
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
 * The allowances of a process that died are made closing and, once their requests (taken over here,
 * needing no placement: their holds are in this database) are final, closed with their releases.
 * The heartbeat has its own timer, so a slow pass never makes this process look dead.
 */
export class Reconciler {
  private readonly passes: OwnerReconciler<TextRecord>;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly repo: TextRequestRepository,
    private readonly allowances: Pick<AllowanceRepository, "closingOfStale" | "closeSettled" | "purge">,
    private readonly runner: TextRunner,
    private readonly logger: Logger,
    private readonly opts: ReconcilerOptions,
  ) {
    this.passes = new OwnerReconciler<TextRecord>(
      {
        due: (limit) => repo.due(opts.workerId, opts.staleMs, limit),
        takeUp: (record) => this.takeUp(record),
        afterPass: () => this.closeStaleAllowances(),
        purge: () => this.purge(),
      },
      logger,
      { intervalMs: opts.intervalMs, ...(opts.batch ? { batch: opts.batch } : {}) },
    );
  }

  async start(): Promise<void> {
    await this.repo.heartbeat(this.opts.workerId);
    this.heartbeat = setInterval(
      () => {
        this.repo.heartbeat(this.opts.workerId).catch((e: unknown) => this.logger.warn({ err: e }, "heartbeat not written"));
      },
      Math.max(100, Math.floor(this.opts.staleMs / 3)),
    );
    this.heartbeat.unref();
    this.passes.start();
  }

  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    this.passes.stop();
    await this.repo.retire(this.opts.workerId).catch(() => undefined);
  }

  /** One pass; returns how many records it took up. Exposed for tests. */
  tick(): Promise<number> {
    return this.passes.tick();
  }

  private async takeUp(record: TextRecord): Promise<boolean> {
    if (this.runner.isActive(record.id)) return false;
    const mine = await this.repo.update(record, {
      ownerId: this.opts.workerId,
      attempts: record.attempts + 1,
      nextAttemptAt: new Date(Date.now() + this.opts.leaseMs),
    });
    if (!mine) return false;
    if (record.ownerId !== this.opts.workerId) {
      this.logger.warn({ request: record.id, previousOwner: record.ownerId }, "taking over a request of a stopped process");
    }
    this.runner.drive(mine).catch((e: unknown) => this.logger.error({ err: e, request: record.id }, "text attempt failed"));
    return true;
  }

  private async closeStaleAllowances(): Promise<void> {
    const stale = await this.allowances.closingOfStale(this.opts.staleMs);
    if (stale > 0) this.logger.warn({ allowances: stale }, "closing the allowances of a stopped process");
    await this.allowances.closeSettled();
  }

  private async purge(): Promise<number> {
    const purged = await this.repo.purge(this.opts.retentionMs);
    await this.allowances.purge(this.opts.retentionMs);
    return purged;
  }
}
