import type {
  FinalHoldsRequest,
  FinalHoldsResponse,
  HoldAuditRequest,
  HoldAuditVerdict,
  UnknownAllowancesRequest,
  UnknownAllowancesResponse,
} from "@meter/contracts";
import { HoldOwnerAudit } from "@meter/hold-client";
import { holdResolutionOf, type TextRecord } from "../domain/text-record";
import type { AllowanceRepository } from "../repositories/allowance.repository";
import type { TextRequestRepository } from "../repositories/text-request.repository";

/**
 * Billing's question about holds that stayed active for minutes: what became of the requests behind
 * them? An unfinished request still owns its hold; a final one answers with what it committed.
 * An allowance this service has a record of is pending until it is closed (requests may be placed on
 * it); once closed the answer is its release with the estimates used, as its outbox sent it (a billing
 * database restored from before that release still has it active); one it has no record of is absent,
 * so billing returns it (docs/api.md, "Allowances").
 */
export class HoldAuditService {
  private readonly requests: HoldOwnerAudit<TextRecord>;

  constructor(
    repo: Pick<TextRequestRepository, "findMany" | "finalHolds">,
    private readonly allowances: Pick<AllowanceRepository, "existing" | "closeUnknown">,
    /** The database's restore point (restorePointOf): null unless it was restored from a backup. */
    restorePoint: () => Promise<Date | null>,
  ) {
    this.requests = new HoldOwnerAudit(repo, holdResolutionOf, restorePoint);
  }

  async audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    // An allowance's owner_ref is its own id, which is also its hold id.
    const allowances = new Map(
      (await this.allowances.existing(request.holds.filter((h) => h.owner_ref === h.hold_id).map((h) => h.hold_id))).map((a) => [a.id, a.closedWith]),
    );
    const requests = await this.requests.audit({ ...request, holds: request.holds.filter((h) => !allowances.has(h.hold_id)) });
    const byHold = new Map(requests.map((v) => [v.hold_id, v]));
    return request.holds.map((h): HoldAuditVerdict => {
      if (!allowances.has(h.hold_id)) return byHold.get(h.hold_id)!;
      const closedWith = allowances.get(h.hold_id);
      return closedWith === null || closedWith === undefined
        ? { hold_id: h.hold_id, status: "pending" }
        : { hold_id: h.hold_id, status: "release", reason: "allowance closed by its holder", used_microrub: closedWith };
    });
  }

  /**
   * Billing-ledger has no open record of these allowances (a restore of its database lost them): no
   * request is placed on them again; a request that would have been takes a per-request hold, and the
   * key's next grant is asked for (docs/api.md, "Allowances").
   */
  async unknownAllowances(request: UnknownAllowancesRequest): Promise<UnknownAllowancesResponse> {
    return { closed: await this.allowances.closeUnknown(request.allowance_ids) };
  }

  /** The books cross-check: final records, a page at a time, as the holds they settled or released. */
  async finalHolds(request: FinalHoldsRequest): Promise<FinalHoldsResponse> {
    return this.requests.finalHolds(request);
  }
}
