import { ErrorCatalog, type RequestLogFields } from "@meter/contracts";
import type { FinalOutcome } from "./text-record";

/**
 * The request log's fields of a final outcome, carried on its settle or release command so billing
 * writes the entry with it (docs/api.md "Request log"): nothing more on the request's path.
 */
export function requestLogFieldsOf(o: FinalOutcome, now: Date): RequestLogFields {
  const r = o.record;
  return {
    endpoint: `/v1/${r.endpoint}`,
    model: r.model,
    // A replay answers what the final outcome says: 200, or the stored error's status (502 upstream_error).
    status: o.state === "completed" ? 200 : ErrorCatalog[o.error.code],
    usage:
      o.state === "completed"
        ? { input_tokens: tokens(o.result.usage.input_tokens), output_tokens: tokens(o.result.usage.output_tokens) }
        : { input_tokens: 0, output_tokens: 0 },
    estimated_cost_microrub: r.estimatedCost,
    requested_at: r.createdAt.toISOString(),
    latency_ms: Math.max(0, now.getTime() - r.createdAt.getTime()),
    upstream_latency_ms: o.state === "completed" && o.upstreamMs !== undefined ? Math.round(o.upstreamMs) : null,
    request_id: r.requestId,
    idempotency_key: r.idempotencyKey,
    ...(o.state === "failed" ? { error: { code: o.error.code, message: o.error.message.slice(0, 1000) } } : {}),
  };
}

/** A count the log's schema takes whatever the upstream reported (it may say 2^53 or -1 tokens). */
function tokens(n: number): number {
  return Number.isFinite(n) ? Math.min(Math.max(0, Math.round(n)), 2_147_483_647) : 0;
}
