import type { HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import type { JobRepository } from "../repositories/job.repository";
import { isUuid } from "./job-query.service";

/**
 * Billing's question about holds that stayed active for minutes: what became of the jobs behind them?
 * A job not yet final still owns its hold; a final one answers with the resolution it committed (its
 * outbox command may be on its way; applying it twice is a no-op); a hold no job of ours holds (a claim
 * that never committed, a job since moved to another hold or refused) is released by billing.
 */
export class HoldAuditService {
  constructor(private readonly repo: JobRepository) {}

  async audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    const jobs = new Map((await this.repo.findMany(request.holds.map((h) => h.owner_ref).filter(isUuid))).map((j) => [j.id, j]));
    return request.holds.map(({ hold_id, owner_ref }): HoldAuditVerdict => {
      const job = jobs.get(owner_ref);
      if (!job || job.holdId !== hold_id) return { hold_id, status: "absent" };
      if (job.state === "succeeded") return { hold_id, status: "settle", amount_microrub: job.cost ?? 0 };
      if (job.state === "failed") return { hold_id, status: "release", reason: "the job failed; nothing charged" };
      return { hold_id, status: "pending" };
    });
  }
}
