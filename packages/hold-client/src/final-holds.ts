import { toMicrorub, type FinalHold, type FinalHoldsRequest, type FinalHoldsResponse, type Operation } from "@meter/contracts";

/** One final record of a hold's owner as its SQL reads it (amounts as PostgreSQL's bigint text). */
export interface FinalHoldRow {
  owner_ref: string;
  hold_id: string;
  organization_id: string;
  key_id: string;
  operation: Operation;
  model: string;
  estimated_cost: string;
  /** The charge of a record that settles; null for one that released its hold. */
  cost: string | null;
  settles: boolean;
  completed_at: Date;
  /** The allowance the record's hold was placed on, locally (null or absent: a per-request hold). */
  allowance_id?: string | null;
  /**
   * billing-ledger's signature of the grant that covers the record: its placement's, or its allowance's
   * (null: none kept, as in records made before grants were signed).
   */
  grant_signature: string | null;
  /** A record on an allowance: the amount billing granted the allowance (what its signature covers). */
  allowance_granted?: string | null;
}

/**
 * The owner's side of the books cross-check (HoldOwnerEndpoints.finalHolds), the same for every
 * service that places holds: its final records after the cursor, oldest first, as the hold each one
 * settled or released. The owner's repository reads them (a page one longer than asked, to know
 * whether another follows); this shapes the answer.
 */
export async function answerFinalHolds(
  request: FinalHoldsRequest,
  read: (after: FinalHoldsRequest["after"], limit: number) => Promise<FinalHoldRow[]>,
  restoredAt: Date | null,
): Promise<FinalHoldsResponse> {
  const rows = await read(request.after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return {
    holds: page.map(finalHoldOf),
    next: rows.length > request.limit && last ? { final_at: last.completed_at.toISOString(), owner_ref: last.owner_ref } : null,
    restored_at: restoredAt?.toISOString() ?? null,
  };
}

function finalHoldOf(row: FinalHoldRow): FinalHold {
  return {
    hold_id: row.hold_id,
    owner_ref: row.owner_ref,
    organization_id: row.organization_id,
    key_id: row.key_id,
    operation: row.operation,
    model: row.model,
    amount_microrub: toMicrorub(row.estimated_cost),
    status: row.settles ? "settled" : "released",
    settled_microrub: row.settles ? toMicrorub(row.cost ?? "0") : null,
    final_at: row.completed_at.toISOString(),
    // As the record's settle or release command names it, so billing can repair a lost one as that command.
    allowance: row.allowance_id
      ? {
          allowance_id: row.allowance_id,
          key_id: row.key_id,
          reserved_microrub: toMicrorub(row.estimated_cost),
          operation: row.operation,
          model: row.model,
          owner_ref: row.owner_ref,
        }
      : null,
    grant: grantOf(row),
  };
}

/** The signed grant that covers the record: its own hold's (for its estimate), or its allowance's (for what was granted). */
function grantOf(row: FinalHoldRow): FinalHold["grant"] {
  if (!row.grant_signature) return null;
  const granted = row.allowance_id ? row.allowance_granted : row.estimated_cost;
  return granted ? { amount_microrub: toMicrorub(granted), signature: row.grant_signature } : null;
}
