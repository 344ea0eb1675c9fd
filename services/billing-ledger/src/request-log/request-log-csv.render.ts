import { REQUEST_LOG_CSV_COLUMNS, type RequestLogEntry } from "@meter/contracts";
import { text } from "../accounts/ledger-csv.render";

export const REQUEST_LOG_CSV_HEADER = REQUEST_LOG_CSV_COLUMNS.join(",");

/** One entry as a CSV line (RFC 4180): the columns of REQUEST_LOG_CSV_COLUMNS, amounts in microrubles. */
export function requestLogCsvLine(e: RequestLogEntry): string {
  const tokens = "input_tokens" in e.usage ? e.usage : undefined;
  const units = "unit" in e.usage ? e.usage : undefined;
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
  ].join(",");
}
