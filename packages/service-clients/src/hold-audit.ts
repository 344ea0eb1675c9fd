import type { HoldAuditRequest, HoldAuditVerdict } from "@meter/contracts";
import { isUuid } from "@meter/service-kit";

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
