import { CommandQueues } from "@meter/contracts";
import { NonRetryableError, type BatchItem, type BatchOutcome, type Bus, type Consumer } from "@meter/messaging";
import type { Logger } from "@meter/service-kit";
import { Counter } from "prom-client";
import type { HoldOpResult, LedgerOp } from "./hold-ops.repository";
import type { HoldService } from "./hold.service";
import { HOLD_SOURCE_OF } from "./hold-source";

type HoldCommand = BatchItem<(typeof CommandQueues.billingHoldCommands.routingKeys)[number]>;

/** Commands per transaction; the broker hands over twice as many so the next batch is there when one commits. */
const MAX_BATCH = 200;

/**
 * Settlements and releases that services hand off through their outboxes (text answers 200 once the
 * result and the command are committed together; this applies the command). What has arrived goes to
 * `apply_hold_ops` as one batch, one transaction, and is acked after the commit.
 *
 * - A command is idempotent on its hold id: a redelivery or a duplicate (even within the batch) is a no-op.
 * - One that conflicts with how the hold was already resolved (a settle of a released hold, another
 *   amount) is logged, counted and acked: the first resolution stands, and nothing is requeued forever.
 * - One that can never apply (a settle of a hold billing never saw, an amount over the hold, a hold
 *   another service placed: only a hold's owner resolves it) goes to the dead-letter queue for a person
 *   to look at.
 * - When the database did not apply it (an outage), it is retried with back-off on the messaging retry
 *   policy below, then dead-lettered; the hold audit still settles the hold on its owner's word.
 */
export function startHoldCommandConsumer(
  bus: Bus,
  holds: HoldService,
  logger: Logger,
  /** billing_hold_commands_total: main.ts registers it; a caller that does not read it may leave it out. */
  outcomes: Counter<"outcome"> = new Counter({ name: "billing_hold_commands_total", help: "hold commands by outcome", labelNames: ["outcome"], registers: [] }),
): Promise<Consumer> {
  return bus.consumeBatch({
    ...CommandQueues.billingHoldCommands,
    maxBatch: MAX_BATCH,
    prefetch: 2 * MAX_BATCH,
    // About 40 minutes of retries before a command is dead-lettered.
    retry: { maxAttempts: 12, backoffMs: [1_000, 5_000, 30_000, 120_000, 300_000] },
    handler: async (items) => {
      const ops = items.map(opOf);
      const applied = await holds.apply(ops.filter((op): op is LedgerOp => op !== undefined));
      let next = 0;
      return items.map((item, i) => {
        if (ops[i] !== undefined) return decide(item, applied[next++]!, logger, outcomes);
        outcomes.inc({ outcome: "rejected" });
        return { ok: false, error: new NonRetryableError(`${item.meta.producer} resolves no holds`) };
      });
    },
  });
}

/** The op of a command, or undefined for a producer that places no holds (the catalog lets none send one). */
function opOf({ payload, meta }: HoldCommand): LedgerOp | undefined {
  // Only the holds its service placed (holds.source): the SQL answers `foreign` for any other.
  const source = HOLD_SOURCE_OF[meta.producer];
  if (!source) return undefined;
  // The two payload shapes differ by field; the routing key says the same thing. A request's hold
  // placed on an allowance names it; a release that closes an allowance says what was used of it. The
  // signer's source still decides: only the service that holds the allowance resolves anything on it.
  const allowance = payload.allowance ? { allowance: payload.allowance } : {};
  // The organization of the hold's key: a release of an id billing never saw is kept under it.
  if (payload.organization_id) Object.assign(allowance, { organization_id: payload.organization_id });
  // The request log's entry is written with the command, in its transaction (docs/api.md "Request log").
  if (payload.log) Object.assign(allowance, { log: payload.log });
  if ("amount_microrub" in payload) return { op: "settle", hold_id: payload.hold_id, amount_microrub: payload.amount_microrub, source, ...allowance };
  const used = payload.used_microrub === undefined ? {} : { used_microrub: payload.used_microrub };
  return { op: "release", hold_id: payload.hold_id, reason: payload.reason, source, ...allowance, ...used };
}

function decide(item: HoldCommand, r: HoldOpResult | Error, logger: Logger, outcomes: Counter<"outcome">): BatchOutcome {
  const log = { hold_id: item.payload.hold_id, command: item.meta.routingKey, message_id: item.meta.messageId };
  if (r instanceof Error) {
    outcomes.inc({ outcome: "not_applied" });
    return { ok: false, error: r };
  }
  switch (r.outcome) {
    case "settled":
    case "released":
    case "released_unplaced":
    case "closing":
      outcomes.inc({ outcome: "applied" });
      return { ok: true };
    case "already":
      outcomes.inc({ outcome: "duplicate" });
      return { ok: true };
    case "conflict":
      outcomes.inc({ outcome: "conflict" });
      // For a request on an allowance: the allowance is no longer open to it, or its estimate does not fit.
      logger.warn(
        { ...log, status: r.hold?.status, settled: r.hold?.settled_microrub, allowance_id: item.payload.allowance?.allowance_id },
        "hold already resolved otherwise; command acknowledged and ignored",
      );
      return { ok: true };
    default:
      outcomes.inc({ outcome: "rejected" });
      logger.error({ ...log, outcome: r.outcome }, "hold command can never apply; dead-lettered");
      return { ok: false, error: new NonRetryableError(`${item.meta.routingKey} of hold ${item.payload.hold_id}: ${r.outcome}`) };
  }
}
