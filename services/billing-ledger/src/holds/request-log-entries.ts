/*
 * The request log entries a hold batch writes. They belong to the batch's statement (an entry commits
 * with its settle or release), so the SQL lives with the holds; the request log reads them.
 */

/**
 * A log figure as the int column takes it, clamped: an upstream's absurd usage (2^53 tokens) must not
 * fail the statement that settles the request's money. NULL stays NULL (GREATEST would make it 0).
 */
const int4 = (expr: string) => `CASE WHEN (${expr}) IS NULL THEN NULL ELSE LEAST(GREATEST((${expr})::numeric, 0), 2147483647)::int END`;

/**
 * The entries of a hold batch's applied commands, as a data-modifying CTE of the batch's own statement
 * (HoldOpsRepository): an entry commits with its command or not at all, at no extra round trip. `ops`
 * is the batch's JSON parameter, `applied` the CTE of apply_hold_ops' rows (joined on their `ord`).
 * Only a settle or release that resolved the hold (or found it resolved: the audit may have come
 * first) writes; a redelivered command finds its entry there already. A released request's error (the
 * owner's `log.error`) is the entry's reason.
 */
export function requestLogInsertCte(ops: string, applied: string): string {
  return `INSERT INTO request_log (hold_id, organization_id, key_id, created_at, endpoint, model, status, succeeded,
       input_tokens, output_tokens, unit, quantity, estimated_cost, cost, latency_ms, upstream_latency_ms, request_id, idempotency_key,
       error_code, error_message, upstream_input_tokens, upstream_output_tokens)
     SELECT a.hold_id, a.organization_id, a.key_id, (l->>'requested_at')::timestamptz, l->>'endpoint', l->>'model',
       (l->>'status')::smallint, a.status = 'settled',
       ${int4("l->'usage'->>'input_tokens'")}, ${int4("l->'usage'->>'output_tokens'")}, l->'usage'->>'unit', (l->'usage'->>'quantity')::bigint,
       (l->>'estimated_cost_microrub')::bigint, CASE WHEN a.status = 'settled' THEN coalesce(a.settled, 0) ELSE 0 END,
       ${int4("l->>'latency_ms'")}, ${int4("l->>'upstream_latency_ms'")}, l->>'request_id', l->>'idempotency_key',
       CASE WHEN a.status = 'released' THEN l->'error'->>'code' END, CASE WHEN a.status = 'released' THEN l->'error'->>'message' END,
       ${int4("l->'upstream_usage'->>'input_tokens'")}, ${int4("l->'upstream_usage'->>'output_tokens'")}
     FROM ${applied} a
     JOIN LATERAL (SELECT (${ops})->(a.ord::int - 1)->'log' AS l) o ON true
     WHERE o.l IS NOT NULL AND jsonb_typeof(o.l) = 'object'
       AND a.outcome IN ('settled', 'released', 'already') AND a.status IN ('settled', 'released')
       AND a.organization_id IS NOT NULL AND a.key_id IS NOT NULL
     ON CONFLICT (organization_id, hold_id) DO NOTHING`;
}
