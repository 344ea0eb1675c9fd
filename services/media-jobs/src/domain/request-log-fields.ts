import type { RequestLogFields } from "@meter/contracts";
import type { FinalOutcome } from "./job-record";

/**
 * The request log's fields of a finished job, carried on its settle or release command so billing
 * writes the entry with it (docs/api.md "Request log"). The client got 202 with the job; the outcome
 * (charged or not) is the entry's own.
 */
export function requestLogFieldsOf(o: FinalOutcome, now: Date): RequestLogFields {
  const job = o.job;
  return {
    endpoint: `/v1/${job.endpoint}`,
    model: job.model,
    status: 202,
    usage: { unit: job.plan.tariff.unit, quantity: o.state === "succeeded" ? o.quantity : 0 },
    estimated_cost_microrub: job.estimatedCost,
    requested_at: job.createdAt.toISOString(),
    latency_ms: Math.max(0, now.getTime() - job.createdAt.getTime()),
    upstream_latency_ms: null,
    request_id: job.requestId,
    idempotency_key: job.idempotencyKey,
    ...(o.state === "failed" ? { error: { code: o.error.code, message: o.error.message.slice(0, 1000) } } : {}),
    ...(o.state === "succeeded" && o.upstreamUsage ? { upstream_usage: o.upstreamUsage } : {}),
  };
}
