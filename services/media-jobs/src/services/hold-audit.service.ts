import type { HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import { answerHoldAudit } from "@meter/service-clients";
import type { JobRepository } from "../repositories/job.repository";

/**
 * Billing's question about holds that stayed active for minutes: what became of the jobs behind them?
 * A job not yet final still owns its hold; a final one answers with what it committed.
 */
export class HoldAuditService {
  constructor(private readonly repo: JobRepository) {}

  audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    return answerHoldAudit(
      request,
      (ids) => this.repo.findMany(ids),
      (job) =>
        job.state === "succeeded"
          ? { status: "settle", amount_microrub: job.cost ?? 0 }
          : job.state === "failed"
            ? { status: "release", reason: "the job failed; nothing charged" }
            : { status: "pending" },
    );
  }
}
