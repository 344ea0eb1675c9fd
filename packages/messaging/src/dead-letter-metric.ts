import type { ChannelModel } from "amqplib";
import { Gauge, type Registry } from "prom-client";
import { deadLetterCount } from "./dead-letters";
import { DEAD_LETTER_QUEUE_MAX_LENGTH } from "./topology";

export const DEAD_LETTER_METRIC = "bus_dead_letter_messages";

/**
 * `bus_dead_letter_messages{queue}`: messages in the dead-letter queue of each durable queue this process
 * consumes, read from the broker at each scrape (a passive declaration, which needs no right). Above 0,
 * something needs an operator (`npm run dlq -- show <queue>`); at the bound the oldest are dropped.
 */
export function registerDeadLetterGauge(registry: Registry, queues: () => readonly string[], model: () => ChannelModel | null): void {
  if (registry.getSingleMetric(DEAD_LETTER_METRIC)) return;
  new Gauge({
    name: DEAD_LETTER_METRIC,
    help: `Messages in each consumed queue's dead-letter queue (at most ${DEAD_LETTER_QUEUE_MAX_LENGTH}; beyond that the oldest are dropped)`,
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      const current = model();
      // No broker right now: the last readings stand (0 would claim the queues are empty).
      if (!current) return;
      for (const queue of queues()) {
        const count = await deadLetterCount(current, queue).catch(() => null);
        if (count !== null) this.set({ queue }, count);
      }
    },
  });
}
