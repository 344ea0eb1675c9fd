import { toMicrorub, type Hold, type PlaceHoldRequest } from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { HoldOpResult, HoldOpsRepository, HoldRow } from "../repositories/hold-ops.repository";

/**
 * Holds: reserve before work, then settle for the actual cost or release. Each call is idempotent on
 * the caller-chosen hold id, and a hold is resolved exactly once; a conflicting second resolution is
 * refused with the hold's current state.
 */
export class HoldService {
  constructor(private readonly ops: HoldOpsRepository) {}

  async place(req: PlaceHoldRequest): Promise<{ hold: Hold; created: boolean }> {
    const r = await this.ops.apply({
      op: "place",
      hold_id: req.hold_id,
      key_id: req.key_id,
      amount: req.amount_microrub,
      operation: req.operation,
      model: req.model,
      source: req.source,
    });
    switch (r.outcome) {
      case "placed":
        return { hold: renderHold(r.hold), created: true };
      case "exists": {
        const hold = renderHold(r.hold);
        // A replay must describe the same reservation; a released tombstone is returned as it is.
        const sameRequest = hold.key_id === req.key_id && hold.amount_microrub === req.amount_microrub;
        if (hold.key_id !== null && !sameRequest) throw BillingErrors.holdIdReused(req.hold_id);
        return { hold, created: false };
      }
      case "invalid_key":
        throw BillingErrors.invalidKey();
      case "daily_budget_exceeded":
        throw BillingErrors.dailyBudgetExceeded();
      case "insufficient_balance":
        throw BillingErrors.insufficientBalance();
      default:
        throw unexpected(r);
    }
  }

  async settle(holdId: string, amount: number): Promise<Hold> {
    const r = await this.ops.apply({ op: "settle", hold_id: holdId, amount });
    switch (r.outcome) {
      case "settled":
      case "already":
        return renderHold(r.hold);
      case "not_found":
        throw BillingErrors.holdNotFound(holdId);
      case "exceeds_hold":
        throw BillingErrors.settleExceedsHold(holdId);
      case "conflict":
        throw BillingErrors.holdConflict(holdId, r.hold.status ?? "unknown");
      default:
        throw unexpected(r);
    }
  }

  async release(holdId: string, reason: string): Promise<Hold> {
    const r = await this.ops.apply({ op: "release", hold_id: holdId, reason });
    switch (r.outcome) {
      case "released":
      case "released_unplaced":
      case "already":
        return renderHold(r.hold);
      case "conflict":
        throw BillingErrors.holdConflict(holdId, r.hold.status ?? "unknown");
      default:
        throw unexpected(r);
    }
  }

  async expire(holdId: string): Promise<HoldOpResult> {
    return this.ops.apply({ op: "expire", hold_id: holdId });
  }
}

export function renderHold(row: HoldRow): Hold {
  return {
    hold_id: row.hold_id,
    organization_id: row.organization_id,
    key_id: row.key_id,
    status: row.status ?? "released",
    amount_microrub: toMicrorub(row.amount ?? 0n),
    settled_microrub: row.settled === null ? null : toMicrorub(row.settled),
    operation: row.operation,
    model: row.model,
    source: row.source,
    budget_day: row.budget_day ? row.budget_day.toISOString().slice(0, 10) : null,
    created_at: (row.created_at ?? new Date(0)).toISOString(),
    resolved_at: row.resolved_at ? row.resolved_at.toISOString() : null,
  };
}

function unexpected(r: HoldOpResult): Error {
  return new Error(`unexpected hold outcome ${r.outcome} for ${r.hold.hold_id}`);
}
