import { randomUUID } from "node:crypto";
import type { Hold, JobErrorCode } from "@meter/contracts";
import { placementOf, type BillingClient } from "@meter/service-clients";
import type { AppError, Logger } from "@meter/service-kit";
import type { JobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";

/** Billing refused the hold of a job's first attempt: nothing is reserved and the job is gone. */
export class Refused extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
  }
}

export interface ReservationDeps {
  repo: JobRepository;
  billing: Pick<BillingClient, "placeHold" | "release">;
  logger: Logger;
  /** Wakes the outbox relay after a commit that wrote a message. */
  onOutbox: () => void;
}

/** The billing refusals a job that was already shown to its client can fail with. */
const REFUSAL_CODES: Partial<Record<string, JobErrorCode>> = {
  insufficient_balance: "insufficient_balance",
  daily_budget_exceeded: "daily_budget_exceeded",
  invalid_api_key: "invalid_api_key",
};

/**
 * Places a job's hold and queues it:
 *
 *   reserving --(hold placed)---------------------> queued + media.job.requested   (one commit)
 *             --(refused, first attempt)-----------> forgotten (nothing reserved; the key may be used again)
 *             --(refused, a later attempt)---------> failed + billing.hold.release  (one commit)
 *             --(billing's answer lost)------------> left reserving: the reconciler places it again after the lease
 *
 * Placing is idempotent on the hold id (first the job's own id), so a placement repeated by a later
 * attempt, or by a duplicate request, never reserves twice. A hold id already used up (released, or
 * settled by a job since purged) is replaced by a fresh one.
 */
export class JobReservation {
  constructor(private readonly deps: ReservationDeps) {}

  async reserve(job: JobRecord, placement?: Promise<Hold>): Promise<JobRecord> {
    const placed = await placementOf(placement ?? this.place(job));
    switch (placed.kind) {
      case "id_used_up":
        return this.reserveAnew(job, placed.why);
      case "refused":
        return this.refuse(job, placed.error);
      case "unreachable":
        // Never delivered on the first attempt: nothing can be held, so the client may simply be told.
        if (placed.error.delivery === "not_delivered" && job.attempts === 1 && job.holdId === job.id) return this.refuse(job, MediaErrors.billingUnavailable());
        this.deps.logger.warn({ job: job.id, err: placed.error }, "hold placement outcome unknown; the reconciler places it again");
        return job;
      case "held":
        break;
    }
    const queued = await this.deps.repo.markQueued(job);
    if (!queued) return this.current(job);
    this.deps.onOutbox();
    return queued;
  }

  private place(job: JobRecord): Promise<Hold> {
    return this.deps.billing.placeHold({
      hold_id: job.holdId,
      key_id: job.keyId,
      amount_microrub: job.estimatedCost,
      operation: job.operation,
      model: job.model,
      source: "media-jobs",
      owner_ref: job.id,
    });
  }

  /**
   * Billing refused the hold (balance, budget, a revoked key). On the request's own attempt nothing is
   * reserved and the job is forgotten, so the client's error is the whole story; a moved hold id is
   * released first (a tombstone), so an earlier placement of it can never land. On a later attempt the
   * client has already seen the job: it fails, its hold id released the same way.
   */
  private async refuse(job: JobRecord, error: AppError): Promise<JobRecord> {
    if (job.attempts > 1) {
      const failed = await this.deps.repo.finish({
        job,
        state: "failed",
        error: { code: REFUSAL_CODES[error.code] ?? "internal_error", message: `${error.message}; nothing was charged` },
        releaseReason: `hold refused (${error.code}); nothing charged`,
      });
      if (failed) this.deps.onOutbox();
      return failed ?? this.current(job);
    }
    if (job.holdId !== job.id) {
      try {
        await this.deps.billing.release(job.holdId, "refused; nothing reserved");
      } catch (e) {
        // Not yet safe to forget: the reconciler places (and is refused, or held) again.
        this.deps.logger.warn({ err: e, job: job.id }, "could not release a refused job's hold id; left to the reconciler");
        return job;
      }
    }
    // The reconciler took the job over meanwhile (this attempt ran past its lease) and places the hold
    // again itself: the client must not be told "refused" of a job that may yet run and be charged.
    if (!(await this.deps.repo.forget(job))) return this.current(job);
    throw new Refused(error);
  }

  /** Moves the job to a fresh hold id and places that one, within the same attempt. */
  private async reserveAnew(job: JobRecord, why: string): Promise<JobRecord> {
    this.deps.logger.warn({ job: job.id, hold: job.holdId }, `${why}; reserving under a new hold id`);
    if (job.holdId === job.id) await this.deps.billing.release(job.holdId, "replaced by a new hold id").catch(() => undefined);
    const moved = await this.deps.repo.moveHold(job, randomUUID());
    if (!moved) return this.current(job);
    return this.reserve(moved);
  }

  private async current(job: JobRecord): Promise<JobRecord> {
    return (await this.deps.repo.find(job.id)) ?? job;
  }
}
