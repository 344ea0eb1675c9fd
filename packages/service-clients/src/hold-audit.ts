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
 */
export async function answerHoldAudit<R extends { id: string; holdId: string }>(
  request: HoldAuditRequest,
  findMany: (ids: string[]) => Promise<R[]>,
  outcomeOf: (record: R) => OwnedOutcome,
): Promise<HoldAuditVerdict[]> {
  // owner_ref is whatever the owner wrote when placing; ours are uuids, anything else holds nothing.
  const records = new Map((await findMany(request.holds.map((h) => h.owner_ref).filter(isUuid))).map((r) => [r.id, r]));
  return request.holds.map(({ hold_id, owner_ref }): HoldAuditVerdict => {
    const record = records.get(owner_ref);
    if (!record || record.holdId !== hold_id) return { hold_id, status: "absent" };
    return { hold_id, ...outcomeOf(record) };
  });
}
