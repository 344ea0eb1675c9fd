import { OwnerReconciler } from "@meter/hold-client";
import type { Logger } from "@meter/service-kit";
import type { JobRecord } from "../domain/job-record";
import type { JobRepository } from "../repositories/job.repository";
import { finishJob } from "./job-finish";
import type { JobReservation } from "./job-reservation";

export interface ReconcilerOptions {
  workerId: string;
  intervalMs: number;
  /** The lease given to a reservation this process takes over. */
  leaseMs: number;
  /** Attempts (placements of a reservation, runs of a job) before a job fails and its hold is released. */
  maxAttempts: number;
  retentionMs: number;
  /** Wakes the outbox relay after a commit that wrote a message. */
  onOutbox: () => void;
  batch?: number;
}

/**
 * Moves on what nobody is moving: a reservation whose request stopped before the hold was confirmed
 * (placed again, idempotently), a running job whose worker died (its lease ran out: queued again with a
 * new message), and a queued job no worker took (its message lost or dead-lettered: sent again). Each is
 * taken with an update guarded by what was read, so any number of workers may reconcile side by side.
 * Attempts are bounded: a job that has used them all fails, and its hold is released.
 */
export class Reconciler {
  private readonly passes: OwnerReconciler<JobRecord>;

  constructor(
    private readonly repo: JobRepository,
    private readonly reservation: Pick<JobReservation, "reserve">,
    private readonly logger: Logger,
    private readonly opts: ReconcilerOptions,
  ) {
    this.passes = new OwnerReconciler<JobRecord>(
      {
        due: (limit) => repo.due(limit),
        takeUp: (job) => this.reconcile(job),
        purge: () => repo.purge(opts.retentionMs),
      },
      logger,
      { intervalMs: opts.intervalMs, ...(opts.batch ? { batch: opts.batch } : {}) },
    );
  }

  start(): void {
    this.passes.start();
  }

  stop(): void {
    this.passes.stop();
  }

  /** One pass; returns how many jobs it moved on. Exposed for tests. */
  tick(): Promise<number> {
    return this.passes.tick();
  }

  private async reconcile(job: JobRecord): Promise<boolean> {
    switch (job.state) {
      case "reserving":
        return this.resumeReservation(job);
      case "running":
        return this.recoverRun(job);
      case "queued":
        return this.resend(job);
      default:
        return false;
    }
  }

  private async resumeReservation(job: JobRecord): Promise<boolean> {
    const mine = await this.repo.takeOverReservation(job, this.opts.workerId, this.opts.leaseMs);
    if (!mine) return false;
    if (mine.attempts > this.opts.maxAttempts) {
      return this.fail(mine, `billing did not confirm the hold in ${this.opts.maxAttempts} attempts`);
    }
    this.logger.warn({ job: job.id, attempt: mine.attempts }, "taking up a reservation its request left unfinished");
    await this.reservation.reserve(mine);
    return true;
  }

  private async recoverRun(job: JobRecord): Promise<boolean> {
    if (job.attempts >= this.opts.maxAttempts) {
      return this.fail(job, `the job was interrupted ${job.attempts} times`);
    }
    const requeued = await this.repo.requeue(job, { sendMessage: true });
    if (!requeued) return false;
    this.logger.warn({ job: job.id, previousOwner: job.ownerId, attempt: job.attempts }, "a worker stopped mid-job; queued again");
    this.opts.onOutbox();
    return true;
  }

  private async resend(job: JobRecord): Promise<boolean> {
    const resent = await this.repo.resend(job);
    if (resent) {
      this.logger.warn({ job: job.id }, "a queued job was not taken up in time; its message sent again");
      this.opts.onOutbox();
    }
    return resent;
  }

  private async fail(job: JobRecord, why: string): Promise<boolean> {
    const failed = await finishJob(
      { repo: this.repo, onOutbox: this.opts.onOutbox },
      { job, state: "failed", error: { code: "internal_error", message: `${why}; nothing was charged` }, releaseReason: `${why}; nothing charged` },
    );
    return failed !== undefined;
  }
}
