import { CommandQueues } from "@meter/contracts";
import { NonRetryableError, type BatchOutcome, type Bus, type Consumer } from "@meter/messaging";
import { AppError, type Logger } from "@meter/service-kit";
import type { HoldService } from "../services/hold.service";

/**
 * Settlements and releases handed off over RabbitMQ (a service's outbox relays them when billing was
 * unreachable). A batch's commands go to the hold batcher together and share one transaction. A command
 * is idempotent, so a redelivery changes nothing; one that conflicts with how the hold was already
 * resolved is acknowledged and logged (the first resolution stands); a command that can never apply
 * (unknown hold, amount over the hold) goes to the dead-letter queue for a person to look at.
 */
export function startHoldCommandConsumer(bus: Bus, holds: HoldService, logger: Logger): Promise<Consumer> {
  return bus.consumeBatch({
    ...CommandQueues.billingHoldCommands,
    maxBatch: 100,
    handler: async (items) =>
      Promise.all(
        items.map(async ({ payload, meta }): Promise<BatchOutcome> => {
          try {
            // The two payload shapes differ by field; the routing key says the same thing.
            if ("amount_microrub" in payload) await holds.settle(payload.hold_id, payload.amount_microrub);
            else await holds.release(payload.hold_id, payload.reason);
            return { ok: true };
          } catch (error) {
            if (error instanceof AppError && error.code === "hold_already_resolved") {
              logger.warn({ hold_id: payload.hold_id, command: meta.routingKey, err: error }, "hold already resolved otherwise; command ignored");
              return { ok: true };
            }
            if (error instanceof AppError) return { ok: false, error: new NonRetryableError(error.message) };
            return { ok: false, error };
          }
        }),
      ),
  });
}
