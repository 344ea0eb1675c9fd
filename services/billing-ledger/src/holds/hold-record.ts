import { toMicrorub, type Hold } from "@meter/contracts";
import type { PgRow } from "@meter/service-kit";
import type { Hold as HoldModel } from "../generated/prisma/client";

/** The columns of `holds` that `apply_hold_ops` returns for the hold an op left behind. */
type ReturnedColumn =
  | "status"
  | "amount"
  | "settled"
  | "organization_id"
  | "key_id"
  | "operation"
  | "model"
  | "source"
  | "owner_ref"
  | "created_at"
  | "resolved_at"
  | "kind"
  | "allowance_id"
  | "consumed"
  | "usable_until";

/**
 * A hold as `apply_hold_ops` returns it: the `holds` row as pg gives it (PgRow over the generated model,
 * so the table is declared once, in schema.prisma), every column null when the op found or made no hold,
 * under `hold_id`, with budget_day already text.
 */
export type HoldSqlRow = { [K in ReturnedColumn]: PgRow<HoldModel>[K] | null } & { hold_id: string; budget_day: string | null };

/** The hold an op left behind, or null when the op found or made none (a refused placement, an unknown id). */
export function holdFromSql(row: HoldSqlRow): Hold | null {
  if (row.status === null || row.amount === null || row.created_at === null) return null;
  return {
    hold_id: row.hold_id,
    organization_id: row.organization_id,
    key_id: row.key_id,
    status: row.status,
    amount_microrub: toMicrorub(row.amount),
    settled_microrub: row.settled === null ? null : toMicrorub(row.settled),
    operation: row.operation,
    model: row.model,
    source: row.source,
    owner_ref: row.owner_ref,
    budget_day: row.budget_day,
    created_at: row.created_at.toISOString(),
    resolved_at: row.resolved_at ? row.resolved_at.toISOString() : null,
    ...kindFields(row.kind ?? "request", row.allowance_id, row.consumed ?? 0, row.usable_until),
  };
}

export function holdFromModel(h: HoldModel): Hold {
  return {
    hold_id: h.id,
    organization_id: h.organizationId,
    key_id: h.keyId,
    status: h.status,
    amount_microrub: toMicrorub(h.amount),
    settled_microrub: h.settled === null ? null : toMicrorub(h.settled),
    operation: h.operation,
    model: h.model,
    source: h.source,
    owner_ref: h.ownerRef,
    // Prisma reads a DATE as UTC midnight, so its ISO date is the database's day.
    budget_day: h.budgetDay ? h.budgetDay.toISOString().slice(0, 10) : null,
    created_at: h.createdAt.toISOString(),
    resolved_at: h.resolvedAt ? h.resolvedAt.toISOString() : null,
    ...kindFields(h.kind, h.allowanceId, h.consumed, h.usableUntil),
  };
}

/** Every hold says its kind and the allowance it was placed on; an allowance also what it consumed and until when it is usable. */
function kindFields(
  kind: "request" | "allowance",
  allowanceId: string | null,
  consumed: string | bigint | number,
  usableUntil: Date | null,
): Pick<Hold, "kind" | "allowance_id" | "consumed_microrub" | "usable_until"> {
  if (kind === "request") return { kind, allowance_id: allowanceId };
  return { kind, allowance_id: null, consumed_microrub: toMicrorub(consumed), usable_until: usableUntil ? usableUntil.toISOString() : null };
}
