import type { Hold } from "@meter/contracts";
import { type AppError, isUnstorableText, unstorableText } from "@meter/service-kit";
import { BillingErrors } from "../errors";
import { HoldBatchNotApplied, type HoldOpResult, type HoldOutcome, type LedgerOp } from "./hold-ops.repository";

/**
 * What each outcome of `apply_hold_ops` answers its caller: null when the op stands (the hold is the
 * answer, a replay included), or the error it is refused with. The one table of these rules.
 */
const REFUSALS: Record<HoldOutcome, ((op: LedgerOp, hold: Hold | null, retryAfterS?: number) => AppError) | null> = {
  placed: null,
  granted: null,
  closing: null,
  exists: null,
  settled: null,
  released: null,
  released_unplaced: null,
  expired: null,
  recovered: null,
  already: null,
  id_reused: (op) => BillingErrors.holdIdReused(op.hold_id),
  invalid_key: () => BillingErrors.invalidKey(),
  daily_budget_exceeded: (_op, _hold, retryAfterS) => BillingErrors.dailyBudgetExceeded(retryAfterS),
  insufficient_balance: (_op, _hold, retryAfterS) => BillingErrors.insufficientBalance(retryAfterS),
  conflict: (op, hold) =>
    hold?.kind === "allowance" && hold.status === "active"
      ? BillingErrors.allowanceConflict(op.hold_id)
      : BillingErrors.holdConflict(op.hold_id, hold?.status ?? "resolved"),
  exceeds_hold: (op) => BillingErrors.settleExceedsHold(op.hold_id),
  // Only the books cross-check recovers, and it reads outcomes itself; a holder is never answered with this.
  exceeds_allowance: (op) => BillingErrors.settleExceedsHold(op.hold_id),
  not_found: (op) => BillingErrors.holdNotFound(op.hold_id),
  // A holder's op carries the source of its signer (HoldService.answerAs): the hold is another service's.
  foreign: (op) => BillingErrors.foreignHold(op.hold_id),
};

/** The answer to one op: the hold it left, or the AppError it is refused with. */
export function answerOf(op: LedgerOp, result: HoldOpResult | Error): Hold | AppError {
  if (result instanceof Error) {
    const transient = result instanceof HoldBatchNotApplied && result.reason !== "error";
    // A NUL in owner_ref or model: the op's transaction rolled back, so nothing is reserved; the
    // holder's value is bad input, which no retry fixes.
    if (result instanceof HoldBatchNotApplied && isUnstorableText(result.cause)) return unstorableText();
    return transient ? BillingErrors.holdsBusy() : BillingErrors.holdOpFailed(op.hold_id, result);
  }
  const refusal = REFUSALS[result.outcome];
  if (refusal) return refusal(op, result.hold, result.retryAfterS);
  if (!result.hold) return BillingErrors.holdOpFailed(op.hold_id, new Error(`outcome ${result.outcome} without a hold`));
  return result.hold;
}
