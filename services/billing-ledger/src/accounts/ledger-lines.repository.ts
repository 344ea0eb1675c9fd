import { toMicrorub, type CabinetLedgerLine, type LedgerLineKind, type LedgerLineStatus } from "@meter/contracts";
import type { Db } from "../db";

export interface LedgerLinesFilter {
  organizationId: string;
  status?: LedgerLineStatus | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Lines older than this id (the last one of the previous page). */
  before?: number | undefined;
  limit: number;
}

type Row = {
  id: bigint;
  kind: LedgerLineKind;
  status: LedgerLineStatus;
  amount: bigint;
  reserved: bigint;
  key_id: string | null;
  key_name: string | null;
  hold_id: string | null;
  model: string | null;
  operation: string | null;
  reference: string | null;
  created_at: Date;
  resolved_at: Date | null;
};

/**
 * The ledger as a member reads it: one line per credit and one per request. A request's line is its
 * hold entry, with where the hold stands now (the settle, release or expire entry adds no line), so it
 * pages on the same (organization_id, id) index as the entries. An allowance (docs/api.md) is no
 * request: its requests have their own lines, and it shows only while it still reserves money (what its
 * requests have not taken, referenced "allowance"), so the lines' amounts always add up to what is
 * available.
 */
export class LedgerLinesRepository {
  constructor(private readonly db: Db) {}

  async page(f: LedgerLinesFilter): Promise<CabinetLedgerLine[]> {
    const rows = await this.db.$queryRaw<Row[]>`
      SELECT * FROM (
        SELECT e.id,
               CASE WHEN e.kind = 'credit' THEN 'credit' WHEN h.kind = 'allowance' THEN 'allowance' ELSE 'request' END AS kind,
               e.key_id, k.name AS key_name, e.hold_id, h.model, h.operation, e.created_at,
               CASE WHEN e.kind = 'credit' THEN 'credited'
                    WHEN h.status = 'active' THEN 'reserved'
                    WHEN h.status = 'settled' THEN 'charged'
                    ELSE 'released' END AS status,
               CASE WHEN e.kind = 'credit' THEN e.amount
                    WHEN h.status = 'active' THEN -hold_reserves(h)
                    WHEN h.status = 'settled' THEN -COALESCE(h.settled, 0)
                    ELSE 0 END AS amount,
               CASE WHEN e.kind = 'credit' THEN 0 ELSE hold_reserves(h) END AS reserved,
               COALESCE(e.reference, h.reason) AS reference,
               h.resolved_at
        FROM ledger_entries e
        LEFT JOIN holds h ON h.organization_id = e.organization_id AND h.id = e.hold_id
        LEFT JOIN api_keys k ON k.organization_id = e.organization_id AND k.id = e.key_id
        WHERE e.organization_id = ${f.organizationId}::uuid
          AND e.kind IN ('credit', 'hold')
          AND (h.kind IS DISTINCT FROM 'allowance' OR h.status = 'active')
          AND (${f.since ?? null}::timestamptz IS NULL OR e.created_at >= ${f.since ?? null}::timestamptz)
          AND (${f.until ?? null}::timestamptz IS NULL OR e.created_at < ${f.until ?? null}::timestamptz)
          AND (${f.before ?? null}::bigint IS NULL OR (e.created_at, e.id) < (
                SELECT c.created_at, c.id FROM ledger_entries c WHERE c.organization_id = ${f.organizationId}::uuid AND c.id = ${f.before ?? null}::bigint))
      ) line
      WHERE ${f.status ?? null}::text IS NULL OR line.status = ${f.status ?? null}::text
      ORDER BY line.created_at DESC, line.id DESC
      LIMIT ${f.limit}`;
    return rows.map((r) => ({
      id: toMicrorub(r.id),
      kind: r.kind,
      status: r.status,
      amount_microrub: toMicrorub(r.amount),
      reserved_microrub: toMicrorub(r.reserved),
      operation: r.operation,
      model: r.model,
      key_id: r.key_id,
      key_name: r.key_name,
      hold_id: r.hold_id,
      reference: r.reference,
      created_at: r.created_at.toISOString(),
      resolved_at: r.resolved_at?.toISOString() ?? null,
    }));
  }
}
