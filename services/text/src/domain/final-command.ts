import { holdCommandOf } from "@meter/hold-client";
import type { OutboxInsert } from "@meter/messaging";
import { allowanceSpendOf } from "./allowance-rule";
import { requestLogFieldsOf } from "./request-log-fields";
import type { FinalOutcome } from "./text-record";

/** A final outcome with the command that resolves its hold, committed together (TextRequestRepository.finish). */
export type CommittedOutcome = FinalOutcome & { command: OutboxInsert };

/**
 * The settle (completed: its charge) or release (failed) of the outcome's hold, naming the allowance it
 * was placed on and carrying its request-log entry.
 */
export function withHoldCommand(outcome: FinalOutcome, now: Date = new Date()): CommittedOutcome {
  const { record } = outcome;
  const resolution =
    outcome.state === "completed" ? { settles: true as const, amount: outcome.cost } : { settles: false as const, reason: outcome.releaseReason };
  return {
    ...outcome,
    command: holdCommandOf(record.holdId, resolution, {
      organizationId: record.organizationId,
      ...allowanceSpendOf(record),
      log: requestLogFieldsOf(outcome, now),
    }),
  };
}
