import { Counter, type Registry } from "prom-client";

export const REFUSED_METRIC = "bus_messages_refused_total";

export type RefusalCounter = Counter<"routing_key" | "reason">;

/**
 * `bus_messages_refused_total{routing_key, reason}`: messages a consumer of this process refused before any
 * handler saw them (unsigned, badly signed, from a producer the catalog does not name, or unreadable).
 * Registered on the service's /metrics registry when one is given; anything above 0 is worth a look. A bus
 * made again on the same registry (a gateway retrying its first connection) counts on the same counter.
 */
export function refusalCounter(registry?: Registry): RefusalCounter {
  const existing = registry?.getSingleMetric(REFUSED_METRIC);
  if (existing) return existing as RefusalCounter;
  return new Counter({
    name: REFUSED_METRIC,
    help: "Messages refused by this process's consumers before any handler saw them, by routing key and reason",
    labelNames: ["routing_key", "reason"],
    registers: registry ? [registry] : [],
  });
}

export const DEAD_LETTERED_METRIC = "bus_messages_dead_lettered_total";

export type DeadLetterCounter = Counter<"queue" | "reason">;

/**
 * `bus_messages_dead_lettered_total{queue, reason}`: messages this process's consumers moved to a queue's
 * dead-letter queue (`<queue>.dlq`), where they stay until an operator looks: the alert on it
 * (k8s/components/prometheus) says a dead-letter queue has something in it.
 */
export function deadLetterCounter(registry?: Registry): DeadLetterCounter {
  const existing = registry?.getSingleMetric(DEAD_LETTERED_METRIC);
  if (existing) return existing as DeadLetterCounter;
  return new Counter({
    name: DEAD_LETTERED_METRIC,
    help: "Messages this process's consumers moved to a dead-letter queue, by queue and reason",
    labelNames: ["queue", "reason"],
    registers: registry ? [registry] : [],
  });
}
