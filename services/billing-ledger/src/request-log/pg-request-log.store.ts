import type { RefusalRecord, RequestLogEntry, RequestLogUsage } from "@meter/contracts";
import { REFUSAL_ENTRIES_PER_KEY_HOUR, toMicrorub } from "@meter/contracts";
import type { Pool } from "pg";
import type { KeyOrganizations } from "../keys/key-organizations";
import { GlobalJob, inGlobalJob } from "../global-jobs";
import type { RequestLogFilterSearch, RequestLogSearch, RequestLogStore } from "./request-log.store";

interface Row {
  hold_id: string;
  key_id: string;
  key_name: string | null;
  created_at: Date;
  completed_at: Date;
  endpoint: string;
  model: string | null;
  status: number;
  succeeded: boolean;
  refused: boolean;
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
  error_code: string | null;
  error_message: string | null;
  count: number;
  upstream_input_tokens: number | null;
  upstream_output_tokens: number | null;
}

/**
 * The request log in billing's PostgreSQL. Each search is one keyset scan of an index that starts with
 * its owner (a key; an organization, or an organization and model), newest first, so a page costs
 * the same at any depth; the filter columns trail in each index, so the scan reads no table rows.
 * Refusals go through request_log_record_refusals (prisma/sql), which collapses and bounds them.
 */
export class PgRequestLogStore implements RequestLogStore {
  constructor(
    private readonly pool: Pool,
    /** BUDGET_TIMEZONE: the budget day a refusal counts on in the daily figures. */
    private readonly timezone: string,
    private readonly keys: KeyOrganizations,
  ) {}

  async search(q: RequestLogSearch): Promise<RequestLogEntry[]> {
    const params: unknown[] = [];
    const where = filterSql(q, params, "r");
    const param = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (q.after) where.push(`(r.created_at, r.hold_id) < (${param(q.after.createdAt)}, ${param(q.after.holdId)}::uuid)`);
    // The page's ids first, from the index alone (every filter column is in it), then its rows by id:
    // a filter that matches little never fetches the rows it passes over.
    const { rows } = await this.pool.query<Row>(
      `WITH page AS MATERIALIZED (
         SELECT r.organization_id, r.hold_id, r.created_at FROM request_log r
         WHERE ${where.join(" AND ")}
         ORDER BY r.created_at DESC, r.hold_id DESC
         LIMIT ${param(q.limit)}
       )
       SELECT r.*, k.name AS key_name
       FROM page p JOIN request_log r ON r.organization_id = p.organization_id AND r.hold_id = p.hold_id LEFT JOIN api_keys k ON k.organization_id = r.organization_id AND k.id = r.key_id
       ORDER BY p.created_at DESC, p.hold_id DESC`,
      params,
    );
    return rows.map(entryOf);
  }

  /** One transaction per organization (docs/scale.md), at once; a key billing does not have is dropped. */
  async recordRefusals(refusals: readonly RefusalRecord[]): Promise<number> {
    const orgs = await this.keys.of(refusals.map((r) => r.key_id));
    const parts = new Map<string, RefusalRecord[]>();
    for (const r of refusals) {
      const org = orgs.get(r.key_id.toLowerCase());
      if (org !== undefined) parts.set(org, [...(parts.get(org) ?? []), r]);
    }
    const counts = await Promise.all(
      [...parts].map(async ([org, part]) => {
        const { rows } = await this.pool.query<{ n: number }>("SELECT request_log_record_refusals($1::uuid, $2::jsonb, $3, $4) AS n", [
          org,
          JSON.stringify(part),
          REFUSAL_ENTRIES_PER_KEY_HOUR,
          this.timezone,
        ]);
        return rows[0]!.n;
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  async purgeBefore(cutoff: Date, batch: number): Promise<number> {
    const { rowCount } = await inGlobalJob(this.pool, GlobalJob.requestLogRetention, (client) =>
      client.query(
        "DELETE FROM request_log WHERE (organization_id, hold_id) IN (SELECT organization_id, hold_id FROM request_log WHERE created_at < $1 LIMIT $2)",
        [cutoff, batch],
      ),
    );
    return rowCount ?? 0;
  }
}

/**
 * The WHERE terms of a filter over the request log aliased `t`, its values pushed onto `params`. Every
 * column it reads trails the keyset indexes (model prefix included), so a scan filters on the index.
 */
export function filterSql(q: RequestLogFilterSearch, params: unknown[], t: string): string[] {
  const where: string[] = [];
  const param = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  if ("organizationId" in q.owner) {
    where.push(`${t}.organization_id = ${param(q.owner.organizationId)}::uuid`);
    if (q.owner.keyId) where.push(`${t}.key_id = ${param(q.owner.keyId)}::uuid`);
  } else {
    where.push(`${t}.key_id = ${param(q.owner.keyId)}::uuid`);
  }
  if (q.from) where.push(`${t}.created_at >= ${param(q.from)}`);
  if (q.to) where.push(`${t}.created_at < ${param(q.to)}`);
  if (q.model !== undefined) where.push(`${t}.model = ${param(q.model)}`);
  if (q.modelPrefix !== undefined) where.push(`starts_with(${t}.model, ${param(q.modelPrefix)})`);
  if (typeof q.status === "number") where.push(`${t}.status = ${param(q.status)}`);
  else if (q.status === "succeeded") where.push(`${t}.succeeded`);
  else if (q.status === "failed") where.push(`NOT ${t}.succeeded AND NOT ${t}.refused`);
  else if (q.status === "refused") where.push(`${t}.refused`);
  return where;
}

function entryOf(r: Row): RequestLogEntry {
  const usage: RequestLogUsage | null = r.refused
    ? null
    : r.unit !== null
      ? { unit: r.unit, quantity: Number(r.quantity ?? 0) }
      : { input_tokens: r.input_tokens ?? 0, output_tokens: r.output_tokens ?? 0 };
  return {
    id: r.hold_id,
    object: "request",
    created_at: r.created_at.toISOString(),
    completed_at: r.completed_at.toISOString(),
    key: { id: r.key_id, name: r.key_name },
    endpoint: r.endpoint,
    model: r.model,
    status: r.status,
    outcome: r.refused ? "refused" : r.succeeded ? "succeeded" : "failed",
    usage,
    estimated_cost_microrub: toMicrorub(r.estimated_cost),
    cost_microrub: toMicrorub(r.cost),
    latency_ms: { total: r.latency_ms, upstream: r.upstream_latency_ms },
    request_id: r.request_id,
    idempotency_key: r.idempotency_key,
    error: r.error_code !== null ? { code: r.error_code, message: r.error_message ?? "" } : null,
    count: r.count,
    upstream_usage: r.upstream_input_tokens === null ? null : { input_tokens: r.upstream_input_tokens, output_tokens: r.upstream_output_tokens ?? 0 },
  };
}
