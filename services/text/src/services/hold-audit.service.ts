import type { FinalHoldsRequest, FinalHoldsResponse, HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import { answerFinalHolds, answerHoldAudit } from "@meter/service-clients";
import type { TextRequestRepository } from "../repositories/text-request.repository";

/**
 * Billing's question about holds that stayed active for minutes: what became of the requests behind
 * them? An unfinished request still owns its hold; a final one answers with what it committed.
 */
export class HoldAuditService {
  constructor(
    private readonly repo: TextRequestRepository,
    /** The database's restore point (restorePointOf): null unless it was restored from a backup. */
    private readonly restorePoint: () => Promise<Date | null>,
  ) {}

  async audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    return answerHoldAudit(
      request,
      (ids) => this.repo.findMany(ids),
      (r) =>
        r.state === "completed"
          ? { status: "settle", amount_microrub: r.cost ?? 0 }
          : r.state === "failed"
            ? { status: "release", reason: "the request failed; nothing charged" }
            : { status: "pending" },
      await this.restorePoint(),
    );
  }

  /** The books cross-check: final records, a page at a time, as the holds they settled or released. */
  async finalHolds(request: FinalHoldsRequest): Promise<FinalHoldsResponse> {
    return answerFinalHolds(request, (after, limit) => this.repo.finalHolds(after, limit), await this.restorePoint());
  }
}
