import type { FinalHoldsRequest, FinalHoldsResponse, HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import { isUuid } from "@meter/service-kit";
import { answerFinalHolds, type FinalHoldRow } from "./final-holds";
import type { HoldResolution } from "./hold-commands";

/** What a hold's owner committed for it: still working, settle for an amount, or release. */
export type OwnedOutcome = { status: "pending" } | { status: "settle"; amount_microrub: number } | { status: "release"; reason: string };

/**
 * The owner's side of billing's hold audit (HoldOwnerEndpoints.audit), the same for every service that
 * places holds: each hold is matched to the owner's record by `owner_ref`; a hold that no record holds
 * under that id (a claim that never committed, a record since moved to another hold or refused) is
 * `absent`, and billing releases it; otherwise the record says what became of it. A final record's
 * resolution may also be on its way through the outbox: billing applies it once either way.
 *
 * After the owner's database was restored from a backup (`restoredAt`, its restore point), a hold
 * placed before then that no record holds is `unknown`, not `absent`: its record may be one the restore
 * lost, whose work was delivered, so billing must not release it on this word.
 */
export async function answerHoldAudit<R extends { id: string; holdId: string }>(
  request: HoldAuditRequest,
  findMany: (ids: string[]) => Promise<R[]>,
  outcomeOf: (record: R) => OwnedOutcome,
  restoredAt: Date | null = null,
): Promise<HoldAuditVerdict[]> {
  // owner_ref is whatever the owner wrote when placing; ours are uuids, anything else holds nothing.
  const records = new Map((await findMany(request.holds.map((h) => h.owner_ref).filter(isUuid))).map((r) => [r.id, r]));
  return request.holds.map(({ hold_id, owner_ref, placed_at }): HoldAuditVerdict => {
    const record = records.get(owner_ref);
    if (!record || record.holdId !== hold_id) {
      // A hold of unknown age is as old as the restore can have reached.
      const beforeRestore = restoredAt !== null && (placed_at === undefined || new Date(placed_at) < restoredAt);
      return { hold_id, status: beforeRestore ? "unknown" : "absent" };
    }
    return { hold_id, ...outcomeOf(record) };
  });
}

/** What the owner's store answers billing's questions from. */
export interface OwnedRecords<R extends { id: string; holdId: string }> {
  findMany(ids: readonly string[]): Promise<R[]>;
  /** Final records after the cursor, oldest first (FinalHoldRow). */
  finalHolds(after: FinalHoldsRequest["after"], limit: number): Promise<FinalHoldRow[]>;
}

/**
 * The owner's answers to billing (HoldOwnerEndpoints): the hold audit (what became of the records
 * behind holds that stayed active for minutes: an unfinished record still owns its hold, a final one
 * answers with what it committed) and the books cross-check's listing of final records.
 */
export class HoldOwnerAudit<R extends { id: string; holdId: string }> {
  constructor(
    private readonly records: OwnedRecords<R>,
    /** How a record resolved its hold; undefined while it is not final. */
    private readonly resolutionOf: (record: R) => HoldResolution | undefined,
    /** The database's restore point (restorePointOf): null unless it was restored from a backup. */
    private readonly restorePoint: () => Promise<Date | null>,
  ) {}

  async audit(request: HoldAuditRequest): Promise<HoldAuditVerdict[]> {
    return answerHoldAudit(
      request,
      (ids) => this.records.findMany(ids),
      (record) => outcomeOf(this.resolutionOf(record)),
      await this.restorePoint(),
    );
  }

  async finalHolds(request: FinalHoldsRequest): Promise<FinalHoldsResponse> {
    return answerFinalHolds(request, (after, limit) => this.records.finalHolds(after, limit), await this.restorePoint());
  }
}

function outcomeOf(resolution: HoldResolution | undefined): OwnedOutcome {
  if (!resolution) return { status: "pending" };
  return resolution.settles ? { status: "settle", amount_microrub: resolution.amount } : { status: "release", reason: resolution.reason };
}
