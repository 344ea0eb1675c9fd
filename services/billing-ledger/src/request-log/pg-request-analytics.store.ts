import type { Pool } from "pg";
import { toMicrorub, type AnalyticsFigures } from "@meter/contracts";
import { filterSql } from "./pg-request-log.store";
import { beginGlobalJob, GlobalJob, inGlobalJob } from "../global-jobs";
import type { AnalyticsRow, AnalyticsSearch, KeyDay, LogTotals, RequestAnalyticsStore } from "./request-analytics.store";
import type { RequestLogFilterSearch } from "./request-log.store";

const HOUR_MS = 3_600_000;

/** Bound parameters of one statement: `add` pushes a value and answers its placeholder. */
class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

/** Where a read of the figures looks: the owner, the window and the model, as SQL over the hourly table (h) and the log (l). */
interface SourceFilter {
  organizationId?: string | undefined;
  keyIds?: readonly string[] | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  model?: string | undefined;
  modelPrefix?: string | undefined;
}

/**
 * The hourly figures of a filter, exact: the roll-up's rows, plus the log's rows the roll-up has not
 * taken yet (written by transactions at or above its watermark, request_log_rollup.next_xid), turned
 * into the same shape. Refusals are counted in the roll-up as they are recorded, so only paid rows
 * come from the log. Both read in one statement: one snapshot, so a pass that commits meanwhile is
 * seen whole or not at all.
 */
function hourlySource(f: SourceFilter, p: Params): string {
  const h: string[] = [];
  const l: string[] = [];
  if (f.organizationId) {
    const org = p.add(f.organizationId);
    h.push(`h.organization_id = ${org}::uuid`);
    l.push(`l.organization_id = ${org}::uuid`);
  }
  if (f.keyIds) {
    const keys = p.add(f.keyIds);
    h.push(`h.key_id = ANY (${keys}::uuid[])`);
    l.push(`l.key_id = ANY (${keys}::uuid[])`);
  }
  if (f.from) {
    const from = p.add(f.from);
    h.push(`h.hour >= ${from}`);
    l.push(`l.created_at >= ${from}`);
  }
  if (f.to) {
    const to = p.add(f.to);
    h.push(`h.hour < ${to}`);
    l.push(`l.created_at < ${to}`);
  }
  if (f.model !== undefined) {
    const model = p.add(f.model);
    h.push(`h.model = ${model}`);
    l.push(`l.model = ${model}`);
  }
  if (f.modelPrefix !== undefined) {
    const prefix = p.add(f.modelPrefix);
    h.push(`starts_with(h.model, ${prefix})`);
    l.push(`starts_with(l.model, ${prefix})`);
  }
  const and = (terms: string[]) => (terms.length ? ` AND ${terms.join(" AND ")}` : "");
  return `SELECT h.hour, h.key_id, h.model, h.succeeded, h.failed, h.refused, h.input_tokens, h.output_tokens, h.quantity, h.cost
          FROM request_log_hourly h WHERE true${and(h)}
          UNION ALL
          SELECT date_trunc('hour', l.created_at, 'UTC'), l.key_id, coalesce(l.model, ''), l.succeeded::int, (NOT l.succeeded)::int, 0,
                 coalesce(l.input_tokens, 0), coalesce(l.output_tokens, 0), coalesce(l.quantity, 0), l.cost
          FROM request_log l
          WHERE l.xid >= (SELECT coalesce(max(next_xid), 0) FROM request_log_rollup) AND NOT l.refused${and(l)}`;
}

/** The same as hourlySource per budget day of `timezone` (request_log_daily), between two budget days included. */
function dailySource(
  f: { organizationId?: string | undefined; keyIds?: readonly string[] | undefined; fromDay?: string; toDay?: string; modelPrefix?: string | undefined },
  timezone: string,
  p: Params,
): string {
  const d: string[] = [];
  const l: string[] = [];
  const tz = p.add(timezone);
  if (f.organizationId) {
    const org = p.add(f.organizationId);
    d.push(`d.organization_id = ${org}::uuid`);
    l.push(`l.organization_id = ${org}::uuid`);
  }
  if (f.keyIds) {
    const keys = p.add(f.keyIds);
    d.push(`d.key_id = ANY (${keys}::uuid[])`);
    l.push(`l.key_id = ANY (${keys}::uuid[])`);
  }
  if (f.fromDay) {
    const from = p.add(f.fromDay);
    d.push(`d.day >= ${from}::date`);
    l.push(`l.created_at >= (${from}::date::timestamp AT TIME ZONE ${tz})`);
  }
  if (f.toDay) {
    const to = p.add(f.toDay);
    d.push(`d.day <= ${to}::date`);
    l.push(`l.created_at < ((${to}::date + 1)::timestamp AT TIME ZONE ${tz})`);
  }
  if (f.modelPrefix !== undefined) {
    const prefix = p.add(f.modelPrefix);
    d.push(`starts_with(d.model, ${prefix})`);
    l.push(`starts_with(l.model, ${prefix})`);
  }
  const and = (terms: string[]) => (terms.length ? ` AND ${terms.join(" AND ")}` : "");
  return `SELECT d.day, d.key_id, d.model, d.succeeded, d.failed, d.refused, d.input_tokens, d.output_tokens, d.quantity, d.cost
          FROM request_log_daily d WHERE true${and(d)}
          UNION ALL
          SELECT (l.created_at AT TIME ZONE ${tz})::date, l.key_id, coalesce(l.model, ''), l.succeeded::int, (NOT l.succeeded)::int, 0,
                 coalesce(l.input_tokens, 0), coalesce(l.output_tokens, 0), coalesce(l.quantity, 0), l.cost
          FROM request_log l
          WHERE l.xid >= (SELECT coalesce(max(next_xid), 0) FROM request_log_rollup) AND NOT l.refused${and(l)}`;
}

const FIGURE_SUMS = `sum(s.succeeded + s.failed + s.refused)::bigint AS requests, sum(s.succeeded)::bigint AS succeeded,
  sum(s.failed)::bigint AS failed, sum(s.refused)::bigint AS refused, sum(s.input_tokens)::bigint AS input_tokens,
  sum(s.output_tokens)::bigint AS output_tokens, sum(s.quantity)::bigint AS units, sum(s.cost)::bigint AS cost`;

interface FigureRow {
  requests: string | null;
  succeeded: string | null;
  failed: string | null;
  refused: string | null;
  input_tokens: string | null;
  output_tokens: string | null;
  units: string | null;
  cost: string | null;
}

function figuresOf(r: FigureRow): AnalyticsFigures {
  const n = (v: string | null) => Number(v ?? 0);
  return {
    requests: n(r.requests),
    succeeded: n(r.succeeded),
    failed: n(r.failed),
    refused: n(r.refused),
    input_tokens: n(r.input_tokens),
    output_tokens: n(r.output_tokens),
    units: n(r.units),
    cost_microrub: toMicrorub(r.cost ?? 0),
  };
}

/**
 * The request log's figures in billing's PostgreSQL. The roll-up pass takes the entries of every
 * transaction below the oldest one still running (pg_snapshot_xmin): those have all committed or
 * aborted, so a pass never misses a row that commits late, and the next pass starts where it ended.
 */
export class PgRequestAnalyticsStore implements RequestAnalyticsStore {
  constructor(
    private readonly pool: Pool,
    /** BUDGET_TIMEZONE: the days of the daily figures. */
    private readonly timezone: string,
  ) {}

  async today(timezone: string, at: Date | null): Promise<string> {
    const { rows } = await this.pool.query<{ today: string }>(
      "SELECT to_char((coalesce($1::timestamptz, now()) AT TIME ZONE $2)::date, 'YYYY-MM-DD') AS today",
      [at, timezone],
    );
    return rows[0]!.today;
  }

  async dayBounds(fromDay: string, toDay: string, timezone: string): Promise<{ from: Date; to: Date }> {
    const { rows } = await this.pool.query<{ from: Date; to: Date }>(
      `SELECT ($1::date::timestamp AT TIME ZONE $3) AS "from", (($2::date + 1)::timestamp AT TIME ZONE $3) AS "to"`,
      [fromDay, toDay, timezone],
    );
    return rows[0]!;
  }

  async rollUp(): Promise<number> {
    const client = await this.pool.connect();
    try {
      await client.query(beginGlobalJob(GlobalJob.requestLogRollup));
      await client.query("INSERT INTO request_log_rollup (id, next_xid) VALUES (1, 0) ON CONFLICT (id) DO NOTHING");
      // One pass at a time (replicas take turns); the watermark is read after the lock is held.
      const from = (await client.query<{ x: string }>("SELECT next_xid AS x FROM request_log_rollup WHERE id = 1 FOR UPDATE")).rows[0]!.x;
      const to = (await client.query<{ x: string }>("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS x")).rows[0]!.x;
      if (BigInt(to) <= BigInt(from)) {
        await client.query("ROLLBACK");
        return 0;
      }
      const { rows } = await client.query<{ n: string }>(
        `WITH taken AS (
           SELECT organization_id, date_trunc('hour', created_at, 'UTC') AS hour, key_id, coalesce(model, '') AS model,
                  count(*) FILTER (WHERE succeeded)::int AS succeeded, count(*) FILTER (WHERE NOT succeeded)::int AS failed,
                  coalesce(sum(input_tokens), 0)::bigint AS input_tokens, coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
                  coalesce(sum(quantity), 0)::bigint AS quantity, sum(cost)::bigint AS cost, count(*) AS n
           FROM request_log WHERE xid >= $1::bigint AND xid < $2::bigint AND NOT refused
           GROUP BY 1, 2, 3, 4
         ), by_day AS (
           SELECT organization_id, (hour AT TIME ZONE $3)::date AS day, key_id, model, sum(succeeded)::int AS succeeded, sum(failed)::int AS failed,
                  sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens, sum(quantity)::bigint AS quantity, sum(cost)::bigint AS cost
           FROM taken GROUP BY 1, 2, 3, 4
         ), added_days AS (
           INSERT INTO request_log_daily AS d (organization_id, day, key_id, model, succeeded, failed, input_tokens, output_tokens, quantity, cost)
           SELECT * FROM by_day
           ON CONFLICT (organization_id, day, key_id, model) DO UPDATE
           SET succeeded = d.succeeded + excluded.succeeded, failed = d.failed + excluded.failed,
               input_tokens = d.input_tokens + excluded.input_tokens, output_tokens = d.output_tokens + excluded.output_tokens,
               quantity = d.quantity + excluded.quantity, cost = d.cost + excluded.cost
         ), added AS (
           INSERT INTO request_log_hourly AS h (organization_id, hour, key_id, model, succeeded, failed, input_tokens, output_tokens, quantity, cost)
           SELECT organization_id, hour, key_id, model, succeeded, failed, input_tokens, output_tokens, quantity, cost FROM taken
           ON CONFLICT (organization_id, hour, key_id, model) DO UPDATE
           SET succeeded = h.succeeded + excluded.succeeded, failed = h.failed + excluded.failed,
               input_tokens = h.input_tokens + excluded.input_tokens, output_tokens = h.output_tokens + excluded.output_tokens,
               quantity = h.quantity + excluded.quantity, cost = h.cost + excluded.cost
         )
         SELECT coalesce(sum(n), 0)::text AS n FROM taken`,
        [from, to, this.timezone],
      );
      await client.query("UPDATE request_log_rollup SET next_xid = $1::bigint WHERE id = 1", [to]);
      await client.query("COMMIT");
      return Number(rows[0]!.n);
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  async figures(q: AnalyticsSearch): Promise<AnalyticsRow[]> {
    const p = new Params();
    const keyIds = q.keyId ? [q.keyId] : undefined;
    // Days read the daily figures (a row per day, not 24); hours the hourly ones.
    const source =
      q.granularity === "day"
        ? `SELECT day AS at, key_id, model, succeeded, failed, refused, input_tokens, output_tokens, quantity, cost
           FROM (${dailySource({ organizationId: q.organizationId, keyIds, fromDay: q.fromDay, toDay: q.toDay, modelPrefix: q.modelPrefix }, this.timezone, p)}) x`
        : `SELECT hour AS at, key_id, model, succeeded, failed, refused, input_tokens, output_tokens, quantity, cost
           FROM (${hourlySource({ organizationId: q.organizationId, keyIds, from: q.from, to: q.to, modelPrefix: q.modelPrefix }, p)}) x`;
    const bucket = q.granularity === "hour" ? `to_char(s.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')` : `to_char(s.at, 'YYYY-MM-DD')`;
    const group = q.groupBy === "key" ? "s.key_id" : q.groupBy === "model" ? "s.model" : "NULL::text";
    const { rows } = await this.pool.query<FigureRow & { bucket: string; grp: string | null; key_name: string | null }>(
      `SELECT b.*, ${q.groupBy === "key" ? "k.name" : "NULL::text"} AS key_name
       FROM (SELECT ${bucket} AS bucket, ${group}::text AS grp, ${FIGURE_SUMS} FROM (${source}) s GROUP BY 1, 2) b
       ${q.groupBy === "key" ? `LEFT JOIN api_keys k ON k.id = b.grp::uuid${q.organizationId ? ` AND k.organization_id = ${p.add(q.organizationId)}` : ""}` : ""}
       ORDER BY b.bucket, b.grp`,
      p.values,
    );
    return rows.map((r) => ({
      bucket: r.bucket,
      keyId: q.groupBy === "key" ? r.grp : null,
      keyName: r.key_name,
      model: q.groupBy === "model" ? r.grp || null : null,
      figures: figuresOf(r),
    }));
  }

  /**
   * A filter by outcome or by nothing adds up whole hours from the roll-up and only the partial hours
   * at the window's edges from the log; a filter by HTTP status (not in the roll-up) reads the log's
   * index alone.
   */
  async totals(q: RequestLogFilterSearch): Promise<LogTotals> {
    if (typeof q.status === "number") return this.totalsFromLog(q);
    const wholeFrom = q.from ? new Date(Math.ceil(q.from.getTime() / HOUR_MS) * HOUR_MS) : undefined;
    const wholeTo = q.to ? new Date(Math.floor(q.to.getTime() / HOUR_MS) * HOUR_MS) : undefined;
    if (wholeFrom && wholeTo && wholeFrom >= wholeTo) return this.totalsFromLog(q);
    const p = new Params();
    const o = q.owner;
    const owner = { organizationId: "organizationId" in o ? o.organizationId : undefined, keyIds: o.keyId ? [o.keyId] : undefined };
    // An unbounded window is every day there is: the daily figures, unless a model is asked for exactly (hourly has it too).
    const source =
      !q.from && !q.to && q.model === undefined
        ? dailySource({ ...owner, modelPrefix: q.modelPrefix }, this.timezone, p)
        : hourlySource({ ...owner, from: wholeFrom, to: wholeTo, model: q.model, modelPrefix: q.modelPrefix }, p);
    const outcome = q.status as "succeeded" | "failed" | "refused" | undefined;
    const pick = (column: "succeeded" | "failed" | "refused") => (outcome === undefined || outcome === column ? `s.${column}` : "0");
    const paid = outcome === undefined || outcome === "succeeded";
    const fromHours = `SELECT ${pick("succeeded")} AS succeeded, ${pick("failed")} AS failed, ${pick("refused")} AS refused,
        ${paid ? "s.input_tokens" : "0"} AS input_tokens, ${paid ? "s.output_tokens" : "0"} AS output_tokens, ${paid ? "s.cost" : "0"} AS cost
      FROM (${source}) s`;
    const partialFrom = wholeFrom && q.from && wholeFrom > q.from;
    const partialTo = wholeTo && q.to && wholeTo < q.to;
    let fromEdges = "";
    if (partialFrom || partialTo) {
      const where = filterSql(q, p.values, "t");
      const edges = [...(partialFrom ? [`t.created_at < ${p.add(wholeFrom)}`] : []), ...(partialTo ? [`t.created_at >= ${p.add(wholeTo)}`] : [])];
      fromEdges = `UNION ALL SELECT t.succeeded::int, (NOT t.succeeded AND NOT t.refused)::int, CASE WHEN t.refused THEN t.count ELSE 0 END,
           coalesce(t.input_tokens, 0), coalesce(t.output_tokens, 0), t.cost
         FROM request_log t WHERE ${where.join(" AND ")} AND (${edges.join(" OR ")})`;
    }
    const { rows } = await this.pool.query<FigureRow>(
      `SELECT sum(s.succeeded + s.failed + s.refused)::bigint AS requests, sum(s.succeeded)::bigint AS succeeded, sum(s.failed)::bigint AS failed,
              sum(s.refused)::bigint AS refused, sum(s.input_tokens)::bigint AS input_tokens, sum(s.output_tokens)::bigint AS output_tokens,
              0 AS units, sum(s.cost)::bigint AS cost
       FROM (${fromHours} ${fromEdges}) s`,
      p.values,
    );
    const { units: _units, ...totals } = figuresOf(rows[0]!);
    return totals;
  }

  private async totalsFromLog(q: RequestLogFilterSearch): Promise<LogTotals> {
    const params: unknown[] = [];
    const where = filterSql(q, params, "t");
    const { rows } = await this.pool.query<FigureRow>(
      `SELECT coalesce(sum(t.count), 0)::bigint AS requests, count(*) FILTER (WHERE t.succeeded)::bigint AS succeeded,
              count(*) FILTER (WHERE NOT t.succeeded AND NOT t.refused)::bigint AS failed,
              coalesce(sum(t.count) FILTER (WHERE t.refused), 0)::bigint AS refused,
              coalesce(sum(t.input_tokens), 0)::bigint AS input_tokens, coalesce(sum(t.output_tokens), 0)::bigint AS output_tokens,
              0 AS units, coalesce(sum(t.cost), 0)::bigint AS cost
       FROM request_log t WHERE ${where.join(" AND ")}`,
      params,
    );
    const { units: _units, ...totals } = figuresOf(rows[0]!);
    return totals;
  }

  async keyDays(keyIds: readonly string[], fromDay: string): Promise<KeyDay[]> {
    if (keyIds.length === 0) return [];
    const p = new Params();
    const source = dailySource({ keyIds, fromDay }, this.timezone, p);
    const { rows } = await this.pool.query<{ key_id: string; day: string; requests: string; errors: string; cost: string }>(
      `SELECT s.key_id, to_char(s.day, 'YYYY-MM-DD') AS day, sum(s.succeeded + s.failed + s.refused)::bigint AS requests,
              sum(s.failed + s.refused)::bigint AS errors, sum(s.cost)::bigint AS cost
       FROM (${source}) s
       GROUP BY 1, 2 ORDER BY 1, 2`,
      p.values,
    );
    return rows.map((r) => ({ keyId: r.key_id, day: r.day, requests: Number(r.requests), errors: Number(r.errors), cost: toMicrorub(r.cost) }));
  }

  async lastUsed(keyIds: readonly string[]): Promise<Map<string, Date>> {
    // The newest entry by created_at; a refusal group's later repeats (completed_at) lie within its
    // hour, so only groups opened in the hour before that entry can end after it.
    const { rows } = await this.pool.query<{ key_id: string; at: Date | null }>(
      `SELECT k.id AS key_id, greatest(n.at, (SELECT max(l.completed_at) FROM request_log l
                WHERE l.key_id = k.id AND l.refused AND l.created_at >= n.created_at - interval '1 hour')) AS at
       FROM unnest($1::uuid[]) AS k(id)
       JOIN LATERAL (SELECT l.created_at, CASE WHEN l.refused THEN l.completed_at ELSE l.created_at END AS at
                     FROM request_log l WHERE l.key_id = k.id ORDER BY l.created_at DESC, l.hold_id DESC LIMIT 1) n ON true`,
      [keyIds],
    );
    return new Map(rows.filter((r) => r.at !== null).map((r) => [r.key_id, r.at!]));
  }

  async typicalEstimates(keyIds: readonly string[]): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ key_id: string; estimate: string | null }>(
      `SELECT k.id AS key_id,
              (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY e.estimated_cost)
               FROM (SELECT l.estimated_cost FROM request_log l WHERE l.key_id = k.id AND NOT l.refused
                     ORDER BY l.created_at DESC, l.hold_id DESC LIMIT 20) e)::text AS estimate
       FROM unnest($1::uuid[]) AS k(id)`,
      [keyIds],
    );
    return new Map(rows.filter((r) => r.estimate !== null).map((r) => [r.key_id, toMicrorub(r.estimate!)]));
  }

  async purgeBefore(cutoff: Date): Promise<number> {
    return inGlobalJob(this.pool, GlobalJob.requestLogRetention, async (client) => {
      const hours = await client.query("DELETE FROM request_log_hourly WHERE hour < $1", [cutoff]);
      const days = await client.query("DELETE FROM request_log_daily WHERE day < ($1::timestamptz AT TIME ZONE $2)::date", [cutoff, this.timezone]);
      return (hours.rowCount ?? 0) + (days.rowCount ?? 0);
    });
  }
}
