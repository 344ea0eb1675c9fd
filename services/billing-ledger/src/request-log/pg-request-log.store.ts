import type { RequestLogEntry, RequestLogUsage } from "@meter/contracts";
import { toMicrorub } from "@meter/contracts";
import type { Pool } from "pg";
import type { RequestLogSearch, RequestLogStore } from "./request-log.store";

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
 * first) writes; a redelivered command finds its entry there already.
 */
export function requestLogInsertCte(ops: string, applied: string): string {
  return `INSERT INTO request_log (hold_id, organization_id, key_id, created_at, endpoint, model, status, succeeded,
       input_tokens, output_tokens, unit, quantity, estimated_cost, cost, latency_ms, upstream_latency_ms, request_id, idempotency_key)
     SELECT a.hold_id, a.organization_id, a.key_id, (l->>'requested_at')::timestamptz, l->>'endpoint', l->>'model',
       (l->>'status')::smallint, a.status = 'settled',
       ${int4("l->'usage'->>'input_tokens'")}, ${int4("l->'usage'->>'output_tokens'")}, l->'usage'->>'unit', (l->'usage'->>'quantity')::bigint,
       (l->>'estimated_cost_microrub')::bigint, CASE WHEN a.status = 'settled' THEN coalesce(a.settled, 0) ELSE 0 END,
       ${int4("l->>'latency_ms'")}, ${int4("l->>'upstream_latency_ms'")}, l->>'request_id', l->>'idempotency_key'
     FROM ${applied} a
     JOIN LATERAL (SELECT (${ops})->(a.ord::int - 1)->'log' AS l) o ON true
     WHERE o.l IS NOT NULL AND jsonb_typeof(o.l) = 'object'
       AND a.outcome IN ('settled', 'released', 'already') AND a.status IN ('settled', 'released')
       AND a.organization_id IS NOT NULL AND a.key_id IS NOT NULL
     ON CONFLICT (hold_id) DO NOTHING`;
}

interface Row {
  hold_id: string;
  key_id: string;
  key_name: string | null;
  created_at: Date;
  completed_at: Date;
  endpoint: string;
  model: string;
  status: number;
  succeeded: boolean;
  input_tokens: number | null;
  output_tokens: number | null;
  unit: string | null;
  quantity: string | null;
  estimated_cost: string;
  cost: string;
  latency_ms: number;
  upstream_latency_ms: number | null;
  request_id: string | null;
  idempotency_key: string | null;
}

/**
 * The request log in billing's PostgreSQL. Each search is one keyset scan of an index that starts with
 * its owner (a key; an organization, or an organization and model), newest first, so a page costs
 * the same at any depth; the filter columns trail in each index, so the scan reads no table rows.
 */
export class PgRequestLogStore implements RequestLogStore {
  constructor(private readonly pool: Pool) {}

  async search(q: RequestLogSearch): Promise<RequestLogEntry[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const param = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if ("organizationId" in q.owner) {
      where.push(`r.organization_id = ${param(q.owner.organizationId)}::uuid`);
      if (q.owner.keyId) where.push(`r.key_id = ${param(q.owner.keyId)}::uuid`);
    } else {
      where.push(`r.key_id = ${param(q.owner.keyId)}::uuid`);
    }
    if (q.from) where.push(`r.created_at >= ${param(q.from)}`);
    if (q.to) where.push(`r.created_at < ${param(q.to)}`);
    if (q.model !== undefined) where.push(`r.model = ${param(q.model)}`);
    if (typeof q.status === "number") where.push(`r.status = ${param(q.status)}`);
    else if (q.status !== undefined) where.push(q.status === "succeeded" ? "r.succeeded" : "NOT r.succeeded");
    if (q.after) where.push(`(r.created_at, r.hold_id) < (${param(q.after.createdAt)}, ${param(q.after.holdId)}::uuid)`);
    // The page's ids first, from the index alone (every filter column is in it), then its rows by id:
    // a filter that matches little never fetches the rows it passes over.
    const { rows } = await this.pool.query<Row>(
      `WITH page AS MATERIALIZED (
         SELECT r.hold_id, r.created_at FROM request_log r
         WHERE ${where.join(" AND ")}
         ORDER BY r.created_at DESC, r.hold_id DESC
         LIMIT ${param(q.limit)}
       )
       SELECT r.*, k.name AS key_name
       FROM page p JOIN request_log r ON r.hold_id = p.hold_id LEFT JOIN api_keys k ON k.id = r.key_id
       ORDER BY p.created_at DESC, p.hold_id DESC`,
      params,
    );
    return rows.map(entryOf);
  }

  async purgeBefore(cutoff: Date, batch: number): Promise<number> {
    const { rowCount } = await this.pool.query("DELETE FROM request_log WHERE hold_id IN (SELECT hold_id FROM request_log WHERE created_at < $1 LIMIT $2)", [
      cutoff,
      batch,
    ]);
    return rowCount ?? 0;
  }
}

function entryOf(r: Row): RequestLogEntry {
  const usage: RequestLogUsage =
    r.unit !== null ? { unit: r.unit, quantity: Number(r.quantity ?? 0) } : { input_tokens: r.input_tokens ?? 0, output_tokens: r.output_tokens ?? 0 };
  return {
    id: r.hold_id,
    object: "request",
    created_at: r.created_at.toISOString(),
    completed_at: r.completed_at.toISOString(),
    key: { id: r.key_id, name: r.key_name },
    endpoint: r.endpoint,
    model: r.model,
    status: r.status,
    outcome: r.succeeded ? "succeeded" : "failed",
    usage,
    estimated_cost_microrub: toMicrorub(r.estimated_cost),
    cost_microrub: toMicrorub(r.cost),
    latency_ms: { total: r.latency_ms, upstream: r.upstream_latency_ms },
    request_id: r.request_id,
    idempotency_key: r.idempotency_key,
  };
}
