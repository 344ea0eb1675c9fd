import { toMicrorub } from "@meter/contracts";
import { Batcher } from "@meter/service-kit";
import type { Database } from "../db";
import type { TextRequestState } from "../generated/prisma/client";
import type { TextPlan } from "../services/text-plan";

export type TextState = TextRequestState;

export interface TextResult {
  text: string;
  stop_reason: "end_turn" | "max_tokens";
  usage: { input_tokens: number; output_tokens: number };
}

/** A failed request's answer, stored rendered so a replay is byte for byte the same. */
export interface StoredError {
  status: number;
  body: string;
}

export interface TextRecord {
  id: string;
  keyId: string;
  userId: string;
  organizationId: string;
  endpoint: string;
  idempotencyKey: string;
  /** The creating request's x-request-id (none for records older than the column). */
  requestId: string | null;
  fingerprint: string;
  model: string;
  plan: TextPlan;
  estimatedCost: number;
  holdId: string;
  state: TextState;
  result: TextResult | null;
  cost: number | null;
  error: StoredError | null;
  attempts: number;
  ownerId: string | null;
  nextAttemptAt: Date;
  createdAt: Date;
}

export type NewTextRecord = Pick<
  TextRecord,
  "id" | "keyId" | "userId" | "organizationId" | "endpoint" | "idempotencyKey" | "requestId" | "fingerprint" | "model" | "plan" | "estimatedCost" | "holdId" | "ownerId"
>;

export type TextPatch = Partial<Pick<TextRecord, "state" | "result" | "cost" | "error" | "attempts" | "ownerId" | "nextAttemptAt" | "holdId">>;

const FINAL: TextState[] = ["completed", "failed"];

/**
 * Text requests. The statements on every request's path (claim, result, completion) are raw SQL on the
 * pool, each batched with those of concurrent requests (one statement, one commit, few socket writes:
 * what limits throughput here); the rest goes through Prisma. The answer may go out before its
 * `completed` mark is committed, because until it is, the record is `settling` and settling again is a
 * no-op in billing.
 */
export class TextRequestRepository {
  private readonly claims: Batcher<NewTextRecord & { createdAt: Date }, boolean>;
  private readonly results: Batcher<{ record: TextRecord; result: TextResult; cost: number }, boolean>;
  private readonly completions: Batcher<string, void>;

  constructor(private readonly db: Database) {
    this.claims = new Batcher((items) => this.insertClaims(items));
    this.results = new Batcher((items) => this.storeResults(items));
    this.completions = new Batcher<string, void>(async (ids) => {
      await this.db.pool.query(
        "UPDATE text_requests SET state = 'completed', completed_at = now(), updated_at = now() WHERE id = ANY($1::uuid[]) AND state = 'settling'",
        [ids],
      );
      return ids.map(() => undefined);
    });
  }

  /** Inserts the record unless (key, endpoint, Idempotency-Key) is taken; returns the one that holds it. */
  async claim(record: NewTextRecord): Promise<{ record: TextRecord; created: boolean }> {
    // The creation time is part of the answer (Responses' created_at), so it is fixed here, not by the database.
    const now = new Date();
    if (await this.claims.submit({ ...record, createdAt: now })) {
      return {
        created: true,
        record: { ...record, state: "reserving", result: null, cost: null, error: null, attempts: 0, nextAttemptAt: now, createdAt: now },
      };
    }
    const existing = await this.db.pool.query<SqlRow>(
      "SELECT * FROM text_requests WHERE key_id = $1 AND endpoint = $2 AND idempotency_key = $3",
      [record.keyId, record.endpoint, record.idempotencyKey],
    );
    // Deleted in between (a refusal frees its key): claim again.
    if (!existing.rows[0]) return this.claim(record);
    return { record: fromSql(existing.rows[0]), created: false };
  }

  /** Concurrent claims in one statement; each is inserted unless its key is taken (even within the batch). */
  private async insertClaims(items: (NewTextRecord & { createdAt: Date })[]): Promise<boolean[]> {
    const rows = items.map((r) => ({
      id: r.id,
      key_id: r.keyId,
      user_id: r.userId,
      organization_id: r.organizationId,
      endpoint: r.endpoint,
      idempotency_key: r.idempotencyKey,
      request_id: r.requestId,
      fingerprint: r.fingerprint,
      model: r.model,
      plan: r.plan,
      estimated_cost: r.estimatedCost,
      hold_id: r.holdId,
      owner_id: r.ownerId,
      created_at: r.createdAt.toISOString(),
    }));
    const { rows: inserted } = await this.db.pool.query<{ id: string }>(
      `INSERT INTO text_requests (id, key_id, user_id, organization_id, endpoint, idempotency_key, request_id, fingerprint, model, plan,
         estimated_cost, hold_id, state, owner_id, created_at, next_attempt_at, updated_at)
       SELECT x.id, x.key_id, x.user_id, x.organization_id, x.endpoint, x.idempotency_key, x.request_id, x.fingerprint, x.model, x.plan,
         x.estimated_cost, x.hold_id, 'reserving', x.owner_id, x.created_at, x.created_at, x.created_at
       FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, key_id uuid, user_id uuid, organization_id uuid, endpoint text,
         idempotency_key text, request_id text, fingerprint text, model text, plan jsonb, estimated_cost bigint, hold_id uuid, owner_id uuid,
         created_at timestamptz)
       ON CONFLICT (key_id, endpoint, idempotency_key) DO NOTHING
       RETURNING id`,
      [JSON.stringify(rows)],
    );
    const ids = new Set(inserted.map((r) => r.id));
    return items.map((r) => ids.has(r.id));
  }

  /** reserving -> settling with the upstream's result and its cost, batched; undefined if the record moved on. */
  async storeResult(record: TextRecord, result: TextResult, cost: number): Promise<TextRecord | undefined> {
    return (await this.results.submit({ record, result, cost })) ? { ...record, state: "settling", result, cost } : undefined;
  }

  private async storeResults(items: { record: TextRecord; result: TextResult; cost: number }[]): Promise<boolean[]> {
    const rows = items.map(({ record, result, cost }) => ({ id: record.id, owner_id: record.ownerId, result, cost }));
    const { rows: updated } = await this.db.pool.query<{ id: string }>(
      `UPDATE text_requests t SET state = 'settling', result = x.result, cost = x.cost, updated_at = now()
       FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, owner_id uuid, result jsonb, cost bigint)
       WHERE t.id = x.id AND t.state = 'reserving' AND t.owner_id IS NOT DISTINCT FROM x.owner_id
       RETURNING t.id`,
      [JSON.stringify(rows)],
    );
    const ids = new Set(updated.map((r) => r.id));
    return items.map(({ record }) => ids.has(record.id));
  }

  async find(id: string): Promise<TextRecord | undefined> {
    const { rows } = await this.db.pool.query<SqlRow>("SELECT * FROM text_requests WHERE id = $1", [id]);
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** Moves a record on only from the state and owner the caller saw, so two runners never both act on it. */
  async transition(record: TextRecord, patch: TextPatch): Promise<TextRecord | undefined> {
    const values: unknown[] = [record.id, record.state, record.ownerId];
    const sets = ["updated_at = now()"];
    const set = (column: string, value: unknown, cast = "") => {
      values.push(value);
      sets.push(`${column} = $${values.length}${cast}`);
    };
    if (patch.state !== undefined) set("state", patch.state, "::text_request_state");
    if (patch.result !== undefined) set("result", JSON.stringify(patch.result), "::jsonb");
    if (patch.cost !== undefined) set("cost", patch.cost);
    if (patch.error !== undefined) set("error", JSON.stringify(patch.error), "::jsonb");
    if (patch.attempts !== undefined) set("attempts", patch.attempts);
    if (patch.holdId !== undefined) set("hold_id", patch.holdId, "::uuid");
    if (patch.ownerId !== undefined) set("owner_id", patch.ownerId, "::uuid");
    if (patch.nextAttemptAt !== undefined) set("next_attempt_at", patch.nextAttemptAt);
    if (patch.state && FINAL.includes(patch.state)) sets.push("completed_at = now()");
    const res = await this.db.pool.query(
      `UPDATE text_requests SET ${sets.join(", ")}
       WHERE id = $1 AND state = $2::text_request_state AND owner_id IS NOT DISTINCT FROM $3::uuid`,
      values,
    );
    return res.rowCount === 1 ? { ...record, ...patch } : undefined;
  }

  /** Records a settled request as completed, batched with others; see the class comment. */
  complete(record: TextRecord): Promise<void> {
    return this.completions.submit(record.id);
  }

  /** A request refused before anything was reserved leaves no trace: a retry with its key starts afresh. */
  async forget(record: TextRecord): Promise<void> {
    await this.db.pool.query("DELETE FROM text_requests WHERE id = $1 AND state = 'reserving'", [record.id]);
  }

  /**
   * Unfinished records due for work that this process may take: its own that nothing in memory is
   * driving, and those of processes whose heartbeat stopped.
   */
  async due(workerId: string, staleMs: number, limit: number): Promise<TextRecord[]> {
    const { rows } = await this.db.pool.query<SqlRow>(
      `SELECT r.* FROM text_requests r
       LEFT JOIN workers w ON w.id = r.owner_id
       WHERE r.state NOT IN ('completed', 'failed')
         AND r.next_attempt_at <= now()
         AND (r.owner_id = $1 OR r.owner_id IS NULL OR w.id IS NULL
              OR w.heartbeat_at < now() - $2::float8 * interval '1 millisecond')
       ORDER BY r.next_attempt_at
       LIMIT $3`,
      [workerId, staleMs, limit],
    );
    return rows.map(fromSql);
  }

  async heartbeat(workerId: string): Promise<void> {
    await this.db.prisma.worker.upsert({ where: { id: workerId }, create: { id: workerId }, update: { heartbeatAt: new Date() } });
  }

  async retire(workerId: string): Promise<void> {
    await this.db.prisma.worker.deleteMany({ where: { id: workerId } });
  }

  /** Drops final records past the idempotency retention, and workers long gone. */
  async purge(retentionMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - retentionMs);
    const { count } = await this.db.prisma.textRequest.deleteMany({ where: { state: { in: FINAL }, completedAt: { lt: cutoff } } });
    await this.db.prisma.worker.deleteMany({ where: { heartbeatAt: { lt: new Date(Date.now() - 86_400_000) } } });
    return count;
  }
}

/** A text_requests row as pg returns it. */
interface SqlRow {
  id: string;
  key_id: string;
  user_id: string;
  organization_id: string;
  endpoint: string;
  idempotency_key: string;
  request_id: string | null;
  fingerprint: string;
  model: string;
  plan: unknown;
  estimated_cost: string;
  hold_id: string;
  state: TextState;
  result: unknown;
  cost: string | null;
  error: unknown;
  attempts: number;
  owner_id: string | null;
  next_attempt_at: Date;
  created_at: Date;
}

function fromSql(row: SqlRow): TextRecord {
  return {
    id: row.id,
    keyId: row.key_id,
    userId: row.user_id,
    organizationId: row.organization_id,
    endpoint: row.endpoint,
    idempotencyKey: row.idempotency_key,
    requestId: row.request_id,
    fingerprint: row.fingerprint,
    model: row.model,
    plan: row.plan as TextPlan,
    estimatedCost: toMicrorub(row.estimated_cost),
    holdId: row.hold_id,
    state: row.state,
    result: row.result as TextResult | null,
    cost: row.cost === null ? null : toMicrorub(row.cost),
    error: row.error as StoredError | null,
    attempts: row.attempts,
    ownerId: row.owner_id,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
  };
}
