import type { HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import { answerHoldAudit } from "@meter/service-clients";
import type { TextRequestRepository } from "../repositories/text-request.repository";

/**
 * Billing's question about holds that stayed active for minutes: what became of the requests behind
 * them? An unfinished request still owns its hold; a final one answers with what it committed.
 */
export class HoldAuditService {
  constructor(private readonly repo: TextRequestRepository) {}

  audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    return answerHoldAudit(
      request,
      (ids) => this.repo.findMany(ids),
      (r) =>
        r.state === "completed"
          ? { status: "settle", amount_microrub: r.cost ?? 0 }
          : r.state === "failed"
            ? { status: "release", reason: "the request failed; nothing charged" }
            : { status: "pending" },
    );
  }
}
