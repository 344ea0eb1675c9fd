import { holdCommandOf } from "@meter/hold-client";
import type { OutboxInsert } from "@meter/messaging";
import type { FinalOutcome } from "./job-record";
import { requestLogFieldsOf } from "./request-log-fields";

/** A final outcome with the command that resolves its hold, committed together (JobRepository.finish). */
export type CommittedOutcome = FinalOutcome & { command: OutboxInsert };

/** The settle (succeeded: its charge) or release (failed) of the job's hold, carrying its request-log entry. */
export function withHoldCommand(outcome: FinalOutcome, now: Date = new Date()): CommittedOutcome {
  const resolution =
    outcome.state === "succeeded" ? { settles: true as const, amount: outcome.cost } : { settles: false as const, reason: outcome.releaseReason };
  return {
    ...outcome,
    command: holdCommandOf(outcome.job.holdId, resolution, { organizationId: outcome.job.organizationId, log: requestLogFieldsOf(outcome, now) }),
  };
}
