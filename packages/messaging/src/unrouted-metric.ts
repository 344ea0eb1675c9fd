import { Gauge, type Registry } from "prom-client";
import type { Bus } from "./bus";
import { UNROUTED_QUEUE, UNROUTED_QUEUE_MAX_LENGTH } from "./topology";

export const UNROUTED_METRIC = "bus_unrouted_messages";

/**
 * `bus_unrouted_messages`: how many messages wait in the unrouted queue, read from the broker at each
 * scrape. Anything above 0 means something was published that no queue was bound to: a consumer that
 * has not run yet, or a publisher nobody listens to. Every process with a bus may report it; they all
 * read the same queue.
 */
export function registerUnroutedGauge(bus: Bus, registry: Registry): Gauge {
  return new Gauge({
    name: UNROUTED_METRIC,
    help: `Messages in ${UNROUTED_QUEUE}, published while no queue was bound to their routing key (at most ${UNROUTED_QUEUE_MAX_LENGTH}; beyond that the oldest are dropped)`,
    registers: [registry],
    async collect() {
      try {
        this.set(await bus.unroutedMessageCount());
      } catch {
        // No broker right now: the last reading stands (0 would claim the queue is empty); the bus logs the outage.
      }
    },
  });
}
