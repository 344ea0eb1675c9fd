import type { Hold, JobErrorCode } from "@meter/contracts";
import { HoldReservation, type HeldRecord } from "@meter/hold-client";
import type { BillingClient } from "@meter/service-clients";
import type { AppError, Logger } from "@meter/service-kit";
import type { JobRecord } from "../domain/job-record";
import { MediaErrors } from "../errors";
import type { JobRepository } from "../repositories/job.repository";
import { finishJob } from "./job-finish";

export interface ReservationDeps {
  repo: Pick<JobRepository, "markQueued" | "moveHold" | "forget" | "finish" | "find">;
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
 *   reserving --(hold placed)-----------> queued + media.job.requested   (one commit)
 *             --(anything else)---------> as @meter/hold-client's HoldReservation says: refused and forgotten
 *                                         on the request's own attempt, failed on a later one, or left
 *                                         reserving for the reconciler when billing's answer was lost
 */
export class JobReservation {
  private readonly holds: HoldReservation<JobRecord>;

  constructor(private readonly deps: ReservationDeps) {
    const { repo } = deps;
    this.holds = new HoldReservation<JobRecord>({
      source: "media-jobs",
      billing: deps.billing,
      logger: deps.logger,
      unavailable: () => MediaErrors.billingUnavailable(),
      store: repo,
      fail: (job, refusal) => finishJob(deps, refusedOutcome(job, refusal)),
    });
  }

  /** The placement of a new job's own hold, which the request path starts alongside its claim. */
  place(job: HeldRecord): Promise<Hold> {
    return this.holds.place(job);
  }

  /** The job queued once its hold is placed; otherwise as it now is. Rejects with Refused on the request's own attempt. */
  async reserve(job: JobRecord, placement?: Promise<Hold>): Promise<JobRecord> {
    const reserved = await this.holds.reserve(job, placement);
    if (reserved.kind !== "held") return reserved.record;
    // billing's signature of the placement is kept with the job, for the books cross-check.
    const queued = await this.deps.repo.markQueued(reserved.record, reserved.hold?.grant_signature ?? null);
    if (!queued) return (await this.deps.repo.find(job.id)) ?? job;
    this.deps.onOutbox();
    return queued;
  }
}

function refusedOutcome(job: JobRecord, refusal: AppError) {
  return {
    job,
    state: "failed" as const,
    error: { code: REFUSAL_CODES[refusal.code] ?? "internal_error", message: `${refusal.message}; nothing was charged` },
    releaseReason: `hold refused (${refusal.code}); nothing charged`,
  };
}
