import { toMicrorub } from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { ApiKeyRepository } from "./api-key.repository";

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
 * A key's daily budget as a hold sees it (prisma/sql/hold_room.sql): the charges settled since
 * 00:00 of the budget day in BUDGET_TIMEZONE, plus every hold of the key still active.
 */
export class KeyUsageService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly timezone: string,
    /** Tests move the clock across midnight, as they do for apply_hold_ops; otherwise the database's now(). */
    private readonly clock?: () => Date,
  ) {}

  async usage(keyId: string): Promise<KeyUsage> {
    const row = await this.keys.dailyUsage(keyId, this.timezone, this.clock?.() ?? null);
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
