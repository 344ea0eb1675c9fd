import type { Metrics } from "@meter/service-kit";
import type { RouterDeps } from "./upstream-router";

/**
 * A service's per-provider metrics of its upstream calls (`<prefix>_upstream_calls_total` by outcome,
 * `<prefix>_upstream_failures_total` by kind, `<prefix>_upstream_seconds`), as the router counts them.
 */
export function routingMetricsOf(metrics: Metrics, prefix: string): NonNullable<RouterDeps["metrics"]> {
  return {
    calls: metrics.counter(`${prefix}_upstream_calls_total`, "upstream calls by provider and outcome (answered, not_sent, rejected, failed, unknown, capped)", [
      "provider",
      "outcome",
    ]),
    failures: metrics.counter(`${prefix}_upstream_failures_total`, "upstream calls that failed, by provider and kind (not_sent, rejected, failed, unknown)", [
      "provider",
      "kind",
    ]),
    seconds: metrics.histogram(
      `${prefix}_upstream_seconds`,
      "upstream call duration by provider",
      ["provider"],
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    ),
  };
}
