import { ANALYTICS_CSV_COLUMNS, REQUEST_LOG_CSV_COLUMNS, type AnalyticsReport, type RequestLogEntry } from "@meter/contracts";
import { text } from "../accounts/ledger-csv.render";

export const REQUEST_LOG_CSV_HEADER = REQUEST_LOG_CSV_COLUMNS.join(",");
export const ANALYTICS_CSV_HEADER = ANALYTICS_CSV_COLUMNS.join(",");

/** One entry as a CSV line (RFC 4180): the columns of REQUEST_LOG_CSV_COLUMNS, amounts in microrubles. */
export function requestLogCsvLine(e: RequestLogEntry): string {
  const tokens = e.usage && "input_tokens" in e.usage ? e.usage : undefined;
  const units = e.usage && "unit" in e.usage ? e.usage : undefined;
  return [
    e.created_at,
    e.key.id,
    text(e.key.name),
    text(e.endpoint),
    text(e.model),
    String(e.status),
    e.outcome,
    tokens ? String(tokens.input_tokens) : "",
    tokens ? String(tokens.output_tokens) : "",
    units ? text(units.unit) : "",
    units ? String(units.quantity) : "",
    String(e.estimated_cost_microrub),
    String(e.cost_microrub),
    String(e.latency_ms.total),
    e.latency_ms.upstream === null ? "" : String(e.latency_ms.upstream),
    text(e.request_id),
    text(e.idempotency_key),
    e.id,
    text(e.error?.code ?? null),
    text(e.error?.message ?? null),
    String(e.count),
  ].join(",");
}

/** The report's figures as CSV lines: one per bucket and group, oldest bucket first (ANALYTICS_CSV_COLUMNS). */
export function analyticsCsvLines(r: AnalyticsReport): string[] {
  return r.buckets.flatMap((bucket, i) =>
    r.groups.map((g) => {
      const f = g.points[i]!;
      return [
        bucket,
        g.key?.id ?? "",
        text(g.key?.name ?? null),
        text(g.model),
        ...[f.requests, f.succeeded, f.failed, f.refused, f.input_tokens, f.output_tokens, f.units, f.cost_microrub].map(String),
      ].join(",");
    }),
  );
}
