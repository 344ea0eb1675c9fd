import type { AllowanceSpend, RequestLogFields } from "@meter/contracts";
import { outboxInsertSql, type OutboxInsert } from "@meter/messaging";

/** How a final record resolves its hold: settled for what it charged, or released (nothing charged) with why. */
export type HoldResolution = { settles: true; amount: number } | { settles: false; reason: string };

/** What a final record's command carries besides the resolution. */
export interface HoldCommandExtras {
  /** The organization of the record's key: billing keeps every hold, a release's tombstone too, under it. */
  organizationId: string;
  /** A hold placed locally on an allowance names it, so billing records the request there. */
  allowance?: AllowanceSpend | undefined;
  /** The request's entry in the request log, written by billing with the settlement. */
  log: RequestLogFields;
}

/**
 * The settle or release command that makes a record's hold final, as an outbox row committed with the
 * record's final state (the relay takes it to billing, which applies it exactly once). Its message id is
 * the hold id, so a command written twice is sent once.
 */
export function holdCommandOf(holdId: string, resolution: HoldResolution, extras: HoldCommandExtras): OutboxInsert {
  const allowance = extras.allowance ? { allowance: extras.allowance } : {};
  const organization_id = extras.organizationId;
  return resolution.settles
    ? outboxInsertSql(
        "billing.hold.settle",
        { version: "v1", hold_id: holdId, amount_microrub: resolution.amount, organization_id, ...allowance, log: extras.log },
        holdId,
      )
    : outboxInsertSql(
        "billing.hold.release",
        { version: "v1", hold_id: holdId, reason: resolution.reason.slice(0, 200), organization_id, ...allowance, log: extras.log },
        holdId,
      );
}
