import { toMicrorub, type ModelActivity, type SpendPoint } from "@meter/contracts";
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

  /** An organization's charges per budget day, model and operation from `fromDay` on. */
  async perDay(organizationId: string, fromDay: string): Promise<SpendPoint[]> {
    const rows = await this.db.$queryRaw<{ day: string; model: string; operation: string; amount: bigint; requests: number }[]>`
      SELECT to_char(budget_day, 'YYYY-MM-DD') AS day, COALESCE(model, 'unknown') AS model, COALESCE(operation, 'unknown') AS operation,
             sum(settled)::bigint AS amount, count(*)::int AS requests
      FROM holds
      WHERE organization_id = ${organizationId}::uuid AND status = 'settled' AND budget_day >= ${fromDay}::date AND settled > 0
      GROUP BY budget_day, model, operation
      ORDER BY budget_day, model, operation`;
    return rows.map((r) => ({ day: r.day, model: r.model, operation: r.operation, amount_microrub: toMicrorub(r.amount), requests: r.requests }));
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
