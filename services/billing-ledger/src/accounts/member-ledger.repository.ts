import { toMicrorub, type CabinetLedgerEntry, type LedgerKind } from "@meter/contracts";
import type { Db } from "../db";

export interface LedgerFilter {
  organizationId: string;
  kind?: LedgerKind | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Entries older than this id (the last one of the previous page). */
  before?: number | undefined;
  limit: number;
}

type Row = {
  id: bigint;
  kind: LedgerKind;
  amount: bigint;
  balance_after: bigint;
  reserved_after: bigint;
  key_id: string | null;
  key_name: string | null;
  hold_id: string | null;
  model: string | null;
  operation: string | null;
  reference: string | null;
  created_at: Date;
};

/**
 * An organization's ledger as the cabinet shows it: each entry with the key's name and the model and
 * operation of its hold, newest first, on the (organization_id, created_at, id) index.
 */
export class MemberLedgerRepository {
  constructor(private readonly db: Db) {}

  async page(f: LedgerFilter): Promise<CabinetLedgerEntry[]> {
    const rows = await this.db.$queryRaw<Row[]>`
      SELECT e.id, e.kind, e.amount, e.balance_after, e.reserved_after, e.key_id, k.name AS key_name, e.hold_id,
             h.model, h.operation, e.reference, e.created_at
      FROM ledger_entries e
      LEFT JOIN holds h ON h.organization_id = e.organization_id AND h.id = e.hold_id
      LEFT JOIN api_keys k ON k.organization_id = e.organization_id AND k.id = e.key_id
      WHERE e.organization_id = ${f.organizationId}::uuid
        AND (${f.kind ?? null}::text IS NULL OR e.kind::text = ${f.kind ?? null}::text)
        AND (${f.since ?? null}::timestamptz IS NULL OR e.created_at >= ${f.since ?? null}::timestamptz)
        AND (${f.until ?? null}::timestamptz IS NULL OR e.created_at < ${f.until ?? null}::timestamptz)
        AND (${f.before ?? null}::bigint IS NULL OR (e.created_at, e.id) < (
              SELECT c.created_at, c.id FROM ledger_entries c WHERE c.organization_id = ${f.organizationId}::uuid AND c.id = ${f.before ?? null}::bigint))
      ORDER BY e.created_at DESC, e.id DESC
      LIMIT ${f.limit}`;
    return rows.map((r) => ({
      id: toMicrorub(r.id),
      kind: r.kind,
      amount_microrub: toMicrorub(r.amount),
      balance_after_microrub: toMicrorub(r.balance_after),
      reserved_after_microrub: toMicrorub(r.reserved_after),
      key_id: r.key_id,
      key_name: r.key_name,
      hold_id: r.hold_id,
      model: r.model,
      operation: r.operation,
      reference: r.reference,
      created_at: r.created_at.toISOString(),
    }));
  }
}
