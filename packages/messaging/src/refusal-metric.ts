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
