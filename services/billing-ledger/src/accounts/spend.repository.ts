import { toMicrorub, type ModelActivity, type SpendPoint, type SpendReport } from "@meter/contracts";
import type { Db } from "../db";

/** What was charged, read from settled holds: each carries its model, operation and budget day. */
export class SpendRepository {
  constructor(
    private readonly db: Db,
    private readonly timezone: string,
  ) {}

  /** Today's budget day (YYYY-MM-DD in BUDGET_TIMEZONE), at `at` or the database's now(). */
  async today(at: Date | null): Promise<string> {
    const rows = await this.db.$queryRaw<{ today: string }[]>`
      SELECT to_char((COALESCE(${at}::timestamptz, now()) AT TIME ZONE ${this.timezone})::date, 'YYYY-MM-DD') AS today`;
    return rows[0]!.today;
  }

  /** An organization's charges per budget day, model and operation from `fromDay` to `toDay`. */
  async perDay(organizationId: string, fromDay: string, toDay: string): Promise<SpendPoint[]> {
    const rows = await this.db.$queryRaw<{ day: string; model: string; operation: string; amount: bigint; requests: number }[]>`
      SELECT to_char(budget_day, 'YYYY-MM-DD') AS day, COALESCE(model, 'unknown') AS model, COALESCE(operation, 'unknown') AS operation,
             sum(settled)::bigint AS amount, count(*)::int AS requests
      FROM holds
      WHERE organization_id = ${organizationId}::uuid AND status = 'settled' AND budget_day BETWEEN ${fromDay}::date AND ${toDay}::date AND settled > 0
      GROUP BY budget_day, model, operation
      ORDER BY budget_day, model, operation`;
    return rows.map((r) => ({ day: r.day, model: r.model, operation: r.operation, amount_microrub: toMicrorub(r.amount), requests: r.requests }));
  }

  /** The same window's charges per key, biggest first. */
  async perKey(organizationId: string, fromDay: string, toDay: string): Promise<SpendReport["by_key"]> {
    const rows = await this.db.$queryRaw<{ key_id: string | null; key_name: string | null; amount: bigint; requests: number }[]>`
      SELECT h.key_id, k.name AS key_name, sum(h.settled)::bigint AS amount, count(*)::int AS requests
      FROM holds h LEFT JOIN api_keys k ON k.organization_id = h.organization_id AND k.id = h.key_id
      WHERE h.organization_id = ${organizationId}::uuid AND h.status = 'settled' AND h.budget_day BETWEEN ${fromDay}::date AND ${toDay}::date AND h.settled > 0
      GROUP BY h.key_id, k.name
      ORDER BY amount DESC, k.name`;
    return rows.map((r) => ({ key_id: r.key_id, key_name: r.key_name, amount_microrub: toMicrorub(r.amount), requests: r.requests }));
  }

  /** Totals per calendar month of budget days, the 12 months ending with `toDay`'s. */
  async perMonth(organizationId: string, toDay: string): Promise<SpendReport["months"]> {
    const rows = await this.db.$queryRaw<{ month: string; amount: bigint; requests: number }[]>`
      SELECT to_char(m, 'YYYY-MM') AS month, COALESCE(s.amount, 0)::bigint AS amount, COALESCE(s.requests, 0)::int AS requests
      FROM generate_series(date_trunc('month', ${toDay}::date) - interval '11 months', date_trunc('month', ${toDay}::date), interval '1 month') m
      LEFT JOIN (
        SELECT date_trunc('month', budget_day) AS month, sum(settled) AS amount, count(*) AS requests
        FROM holds
        WHERE organization_id = ${organizationId}::uuid AND status = 'settled' AND settled > 0
          AND budget_day >= date_trunc('month', ${toDay}::date) - interval '11 months' AND budget_day <= ${toDay}::date
        GROUP BY 1
      ) s ON s.month = m
      ORDER BY m`;
    return rows.map((r) => ({ month: r.month, amount_microrub: toMicrorub(r.amount), requests: r.requests }));
  }

  /** What the organization's open allowances reserve and their requests have not taken yet. */
  async setAside(organizationId: string): Promise<number> {
    const rows = await this.db.$queryRaw<{ amount: bigint }[]>`
      SELECT COALESCE(sum(hold_reserves(h)), 0)::bigint AS amount
      FROM holds h WHERE organization_id = ${organizationId}::uuid AND kind = 'allowance' AND status = 'active'`;
    return toMicrorub(rows[0]!.amount);
  }

  /** Per model and operation: what settled since `since`, and the holds still active (placed at the old price). */
  async activity(since: Date): Promise<ModelActivity[]> {
    const rows = await this.db.$queryRaw<
      { model: string; operation: string; settled_requests: number; settled: bigint; active_holds: number; reserved: bigint }[]
    >`
      SELECT model, COALESCE(operation, 'unknown') AS operation,
             count(*) FILTER (WHERE status = 'settled')::int AS settled_requests,
             COALESCE(sum(settled) FILTER (WHERE status = 'settled'), 0)::bigint AS settled,
             count(*) FILTER (WHERE status = 'active')::int AS active_holds,
             COALESCE(sum(amount) FILTER (WHERE status = 'active'), 0)::bigint AS reserved
      FROM holds
      WHERE model IS NOT NULL AND (status = 'active' OR (status = 'settled' AND resolved_at >= ${since}))
      GROUP BY model, operation
      ORDER BY model, operation`;
    return rows.map((r) => ({
      model: r.model,
      operation: r.operation,
      settled_requests: r.settled_requests,
      settled_microrub: toMicrorub(r.settled),
      active_holds: r.active_holds,
      reserved_microrub: toMicrorub(r.reserved),
    }));
  }
}
