import { toMicrorub } from "@meter/contracts";
import type { Db } from "../db";
import { BillingErrors } from "../errors";

export interface KeyUsage {
  object: "key_usage";
  key_id: string;
  /** The budget day, as the database reckons it in `timezone` (YYYY-MM-DD). */
  day: string;
  timezone: string;
  /** Charges settled on this budget day. */
  spent_microrub: number;
  /** Every active hold of the key, whenever it was placed. */
  reserved_microrub: number;
  daily_budget_microrub: number;
  remaining_microrub: number;
}

/**
 * A key's daily budget as a hold sees it (prisma/sql/apply_hold_ops.sql): the charges settled since
 * 00:00 of the budget day in BUDGET_TIMEZONE, plus every hold of the key still active.
 */
export class KeyUsageService {
  constructor(
    private readonly db: Db,
    private readonly timezone: string,
    /** Tests move the clock across midnight, as they do for apply_hold_ops; otherwise the database's now(). */
    private readonly clock?: () => Date,
  ) {}

  async usage(keyId: string): Promise<KeyUsage> {
    const at = this.clock?.() ?? null;
    const rows = await this.db.$queryRaw<{ day: string; spent: bigint; reserved: bigint; daily_budget: bigint }[]>`
      SELECT to_char(d.day, 'YYYY-MM-DD') AS day, COALESCE(u.spent, 0)::bigint AS spent, k.reserved, k.daily_budget
      FROM api_keys k
      CROSS JOIN (SELECT (COALESCE(${at}::timestamptz, now()) AT TIME ZONE ${this.timezone})::date AS day) d
      LEFT JOIN key_daily_usage u ON u.key_id = k.id AND u.day = d.day
      WHERE k.id = ${keyId}::uuid`;
    const row = rows[0];
    if (!row) throw BillingErrors.keyNotFound(keyId);
    const left = row.daily_budget - row.spent - row.reserved;
    return {
      object: "key_usage",
      key_id: keyId,
      day: row.day,
      timezone: this.timezone,
      spent_microrub: toMicrorub(row.spent),
      reserved_microrub: toMicrorub(row.reserved),
      daily_budget_microrub: toMicrorub(row.daily_budget),
      remaining_microrub: toMicrorub(left > 0n ? left : 0n),
    };
  }
}
