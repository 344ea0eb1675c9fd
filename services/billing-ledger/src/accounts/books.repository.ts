import type { Db } from "../db";

/** An organization's money as its rows say it, and as the ledger and the holds add it up. */
export interface OrganizationTotals {
  id: string;
  name: string;
  balance: bigint;
  reserved: bigint;
  credits: bigint;
  settled: bigint;
  active: bigint;
  credit_rows: bigint;
  settled_holds: bigint;
  /** Whether a charge was recovered from its owner's record (the books cross-check): only that may leave money owed. */
  recovered: boolean;
}

/**
 * The books check's reads, each summed or compared in SQL straight from the tables: what disagrees is
 * returned (at most 100 rows of each kind), never corrected.
 */
export class BooksRepository {
  constructor(private readonly db: Db) {}

  organizationTotals() {
    return this.db.$queryRaw<OrganizationTotals[]>`
      SELECT o.id, o.name, o.balance, o.reserved,
        COALESCE((SELECT sum(l.amount) FROM ledger_entries l WHERE l.organization_id = o.id AND l.kind = 'credit'), 0)::bigint AS credits,
        COALESCE((SELECT sum(l.amount) FROM ledger_entries l WHERE l.organization_id = o.id AND l.kind = 'settle'), 0)::bigint AS settled,
        COALESCE((SELECT sum(hold_reserves(h)) FROM holds h WHERE h.organization_id = o.id AND h.status = 'active'), 0)::bigint AS active,
        COALESCE((SELECT sum(c.amount) FROM credits c WHERE c.organization_id = o.id), 0)::bigint AS credit_rows,
        COALESCE((SELECT sum(h.settled) FROM holds h WHERE h.organization_id = o.id AND h.status = 'settled'), 0)::bigint AS settled_holds,
        EXISTS (SELECT 1 FROM ledger_entries l WHERE l.organization_id = o.id AND l.kind = 'settle' AND l.reference = 'recovered') AS recovered
      FROM organizations o ORDER BY o.created_at`;
  }

  /** Holds not placed exactly once, resolved more than once, or whose status disagrees with their entries. */
  badHolds() {
    return this.db.$queryRaw<{ id: string; status: string; placed: bigint; resolutions: bigint; tombstone: boolean }[]>`
      SELECT h.id, h.status::text AS status,
        count(l.id) FILTER (WHERE l.kind = 'hold') AS placed,
        count(l.id) FILTER (WHERE l.kind IN ('settle', 'release', 'expire')) AS resolutions,
        (h.key_id IS NULL) AS tombstone
      FROM holds h LEFT JOIN ledger_entries l ON l.organization_id = h.organization_id AND l.hold_id = h.id
      GROUP BY h.organization_id, h.id
      HAVING
        (h.key_id IS NULL AND count(l.id) > 0)
        OR (h.key_id IS NOT NULL AND count(l.id) FILTER (WHERE l.kind = 'hold') <> 1)
        OR count(l.id) FILTER (WHERE l.kind IN ('settle', 'release', 'expire')) > 1
        OR (h.status = 'active') <> (count(l.id) FILTER (WHERE l.kind IN ('settle', 'release', 'expire')) = 0 AND h.key_id IS NOT NULL)
        OR (h.status = 'settled' AND count(l.id) FILTER (WHERE l.kind = 'settle') <> 1)
      LIMIT 100`;
  }

  /**
   * Ledger entries of holds whose amount is not the hold's: its settled amount for a settle, and for a
   * release or expiry what it still reserved (all of a request's hold, amount - consumed of an allowance).
   */
  badEntries() {
    return this.db.$queryRaw<{ id: bigint; hold_id: string; kind: string; amount: bigint; expected: bigint | null }[]>`
      SELECT * FROM (
        SELECT l.id, l.hold_id, l.kind::text AS kind, l.amount,
          CASE l.kind WHEN 'settle' THEN h.settled WHEN 'hold' THEN h.amount ELSE hold_reserves(h) END AS expected
        FROM ledger_entries l JOIN holds h ON h.organization_id = l.organization_id AND h.id = l.hold_id
        WHERE l.kind IN ('hold', 'settle', 'release', 'expire')
      ) e
      WHERE e.amount IS DISTINCT FROM e.expected
      LIMIT 100`;
  }

  /**
   * Allowances whose figures disagree with the requests' holds recorded on them: consumed must be the
   * sum of their estimates (each request's hold an estimate moved out of it), a closed one released only
   * once all it was closed with arrived, and no request on anything but an allowance.
   */
  badAllowances() {
    return this.db.$queryRaw<{ id: string; kind: string; status: string; consumed: bigint; closing_used: bigint | null; requests: bigint }[]>`
      SELECT a.id, a.kind::text AS kind, a.status::text AS status, a.consumed, a.closing_used,
        COALESCE(r.estimates, 0)::bigint AS requests
      FROM holds a
      LEFT JOIN (SELECT organization_id, allowance_id, sum(amount) AS estimates FROM holds WHERE allowance_id IS NOT NULL
                 GROUP BY organization_id, allowance_id) r
        ON r.organization_id = a.organization_id AND r.allowance_id = a.id
      WHERE (a.kind = 'allowance' OR r.allowance_id IS NOT NULL)
        AND (a.kind <> 'allowance' OR a.consumed <> COALESCE(r.estimates, 0)
             OR (a.status = 'released' AND a.closing_used IS NOT NULL AND a.consumed <> a.closing_used))
      LIMIT 100`;
  }

  /** Keys' daily spending that differs from what their holds settled on that budget day. */
  badUsage() {
    return this.db.$queryRaw<{ key_id: string; day: string; spent: bigint; h_spent: bigint }[]>`
      WITH by_day AS (
        SELECT organization_id, key_id, budget_day AS day, sum(settled)::bigint AS h_spent
        FROM holds WHERE status = 'settled' AND settled > 0 GROUP BY organization_id, key_id, budget_day
      )
      SELECT COALESCE(u.key_id, b.key_id) AS key_id, to_char(COALESCE(u.day, b.day), 'YYYY-MM-DD') AS day,
        COALESCE(u.spent, 0) AS spent, COALESCE(b.h_spent, 0) AS h_spent
      FROM key_daily_usage u FULL OUTER JOIN by_day b ON b.organization_id = u.organization_id AND b.key_id = u.key_id AND b.day = u.day
      WHERE COALESCE(u.spent, 0) <> COALESCE(b.h_spent, 0)
      LIMIT 100`;
  }

  /** Keys whose reservation is not the sum of what their active holds still reserve (amount - consumed). */
  badReserved() {
    return this.db.$queryRaw<{ key_id: string; reserved: bigint; active: bigint }[]>`
      SELECT * FROM (
        SELECT k.id AS key_id, k.reserved,
          COALESCE((SELECT sum(hold_reserves(h)) FROM holds h WHERE h.key_id = k.id AND h.status = 'active'), 0)::bigint AS active
        FROM api_keys k
      ) r
      WHERE r.reserved <> r.active
      LIMIT 100`;
  }

  /** Holds per status; a tombstone (a release before placement) has no key. */
  holdCounts() {
    return this.db.$queryRaw<{ status: string; tombstone: boolean; n: bigint }[]>`
      SELECT status::text AS status, (key_id IS NULL) AS tombstone, count(*) AS n FROM holds GROUP BY 1, 2`;
  }

  /** Active holds older than an hour, and active holds without an owner. */
  async activeHolds(): Promise<{ stale: bigint; ownerless: bigint } | undefined> {
    const rows = await this.db.$queryRaw<{ stale: bigint; ownerless: bigint }[]>`
      SELECT count(*) FILTER (WHERE created_at < now() - interval '1 hour') AS stale, count(*) FILTER (WHERE owner_ref IS NULL) AS ownerless
      FROM holds WHERE status = 'active'`;
    return rows[0];
  }
}
