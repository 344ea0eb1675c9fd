import type { HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import type { TextRequestRepository } from "../repositories/text-request.repository";

/**
 * Billing's question about holds that stayed active for minutes: what became of the requests behind
 * them? A hold whose request is unfinished is still ours; one whose request is final gets the
 * resolution that request committed (its outbox command may be on its way; applying it twice is a
 * no-op); a hold no request of ours holds (a claim that never committed, a record since replaced or
 * refused) is released by billing.
 */
export class HoldAuditService {
  constructor(private readonly repo: TextRequestRepository) {}

  async audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    const records = new Map((await this.repo.findMany(request.holds.map((h) => h.owner_ref).filter(isUuid))).map((r) => [r.id, r]));
    return request.holds.map(({ hold_id, owner_ref }): HoldAuditVerdict => {
      const r = records.get(owner_ref);
      if (!r || r.holdId !== hold_id) return { hold_id, status: "absent" };
      if (r.state === "completed") return { hold_id, status: "settle", amount_microrub: r.cost ?? 0 };
      if (r.state === "failed") return { hold_id, status: "release", reason: "the request failed; nothing charged" };
      return { hold_id, status: "pending" };
    });
  }
}

function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
