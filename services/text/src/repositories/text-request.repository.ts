import type { Pool } from "pg";
import { toMicrorub, type FinalHoldsCursor } from "@meter/contracts";
import { ownedRecordOf, type FinalHoldRow } from "@meter/hold-client";
import { DIRECT_PUBLISH_LEASE_MS, type OutboxRow } from "@meter/messaging";
import { Batcher, deleteInChunks, type PgRow } from "@meter/service-kit";
import type { CommittedOutcome } from "../domain/final-command";
import type { NewTextRecord, StoredError, TextPlan, TextRecord, TextResult } from "../domain/text-record";
import type { TextRequest } from "../generated/prisma/client";

/**
 * Text requests. The statements on every request's path (claim, final outcome) are raw SQL on the pool,
 * each batched with those of concurrent requests: one statement and one commit for many requests, which
 * is what limits throughput here. A batch that fails is run again item by item, so one request that
 * cannot be stored never fails its neighbours.
 *
 * Texts (the plan, the result, the error) are stored as JSON in `text` columns, not `jsonb`: JSON.stringify
 * escapes every character an upstream can send (U+0000 included, which jsonb refuses), so any answer
 * can be stored and replayed byte for byte.
 */
export class TextRequestRepository {
  private readonly claims: Batcher<NewTextRecord, ClaimResult>;
  private readonly finals: Batcher<CommittedOutcome, boolean>;

  constructor(
    private readonly pool: Pool,
    /**
     * Takes the hold commands a final batch committed, to publish them at once (the outbox relay's
     * publishNow); their rows wait DIRECT_PUBLISH_LEASE_MS before the relay's poll would take them.
     */
    private readonly publishNow: (rows: OutboxRow[]) => void = () => undefined,
  ) {
    this.claims = new Batcher((items) => this.insertClaims(items));
    this.finals = new Batcher((items) => this.writeFinals(items));
  }

  /**
   * Inserts the record unless (key, endpoint, Idempotency-Key) is taken; returns the one that holds it.
   * A record on an allowance is inserted only while that allowance is open and this process's, its
   * estimate added to the allowance's `used` in the same statement; otherwise nothing is inserted and
   * the answer is `allowanceClosed` (the request takes a per-request hold instead).
   */
  async claim(record: NewTextRecord): Promise<{ record: TextRecord; created: boolean } | { allowanceClosed: true }> {
    for (;;) {
      const claimed = await this.claims.submit(record);
      if (claimed === "inserted") {
        return { created: true, record: { ...record, state: "reserving", result: null, cost: null, error: null } };
      }
      const { rows } = await this.pool.query<SqlRow>("SELECT * FROM text_requests WHERE key_id = $1 AND endpoint = $2 AND idempotency_key = $3", [
        record.keyId,
        record.endpoint,
        record.idempotencyKey,
      ]);
      const existing = rows[0] ? fromSql(rows[0]) : undefined;
      if (!existing) {
        if (claimed === "allowance_closed") return { allowanceClosed: true };
        // Deleted in between (a refusal frees its key): claim again.
        continue;
      }
      // Our own insert, committed by a batch whose answer was lost and which then ran again item by item.
      if (existing.requestId === record.requestId && existing.ownerId === record.ownerId) return { record: existing, created: true };
      return { record: existing, created: false };
    }
  }

  /**
   * Concurrent claims in one statement; each is inserted unless its key is taken (even within the
   * batch) or the allowance it names is not open and this process's (locked, so a closing allowance
   * gets no request after it was seen open). The estimates of the rows actually inserted go into their
   * allowances' `used`, whose CHECK keeps it within what billing granted.
   */
  private async insertClaims(items: NewTextRecord[]): Promise<ClaimResult[]> {
    const {
      rows: [answer],
    } = await this.pool.query<{ inserted: string[] | null; open: string[] | null }>({
      name: "text_claim",
      text: CLAIM_SQL,
      values: [
        items.map((r) => r.id),
        items.map((r) => r.keyId),
        items.map((r) => r.userId),
        items.map((r) => r.organizationId),
        items.map((r) => r.endpoint),
        items.map((r) => r.idempotencyKey),
        items.map((r) => r.requestId),
        items.map((r) => r.fingerprint),
        items.map((r) => r.model),
        items.map((r) => JSON.stringify(r.plan)),
        items.map((r) => r.estimatedCost),
        items.map((r) => r.holdId),
        items.map((r) => r.allowanceId),
        items.map((r) => r.attempts),
        items.map((r) => r.ownerId),
        items.map((r) => r.nextAttemptAt.toISOString()),
        items.map((r) => r.createdAt.toISOString()),
      ],
    });
    const inserted = new Set(answer?.inserted ?? []);
    const open = new Set(answer?.open ?? []);
    return items.map((r) => (inserted.has(r.id) ? "inserted" : r.allowanceId !== null && !open.has(r.allowanceId) ? "allowance_closed" : "taken"));
  }

  /**
   * A request whose hold billing refused moves onto an open allowance of this process instead, under a
   * fresh hold id, its estimate added to the allowance's `used` in the same statement (as a claim
   * does). Undefined when the record moved on or the allowance is no longer open.
   */
  async moveToAllowance(record: TextRecord, allowanceId: string, holdId: string): Promise<TextRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>(
      `WITH usable AS (
         SELECT a.id FROM allowances a
         WHERE a.id = $4::uuid AND ${usableAllowance("$2::uuid")}
         FOR UPDATE
       ), moved AS (
         UPDATE text_requests SET allowance_id = (SELECT id FROM usable), hold_id = $5::uuid, updated_at = now()
         WHERE id = $1 AND state = 'reserving' AND owner_id = $2::uuid AND attempts = $3 AND allowance_id IS NULL AND EXISTS (SELECT 1 FROM usable)
         RETURNING *
       ), spent AS (
         UPDATE allowances a SET used = a.used + m.estimated_cost, requests = a.requests + 1, last_used_at = now()
         FROM moved m WHERE a.id = m.allowance_id
       )
       SELECT * FROM moved`,
      [record.id, record.ownerId, record.attempts, allowanceId, holdId],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /**
   * Makes a record final together with the command that resolves its hold, in one commit: `completed`
   * with its result and a `billing.hold.settle`, or `failed` with its error and a `billing.hold.release`.
   * The command is published right after the commit (publishNow), or by the outbox relay if that fails;
   * billing applies it exactly once. Only the owner
   * that drove this attempt may do it; false if the record moved on meanwhile.
   */
  finish(outcome: CommittedOutcome): Promise<boolean> {
    return this.finals.submit(outcome);
  }

  private async writeFinals(items: CommittedOutcome[]): Promise<boolean[]> {
    const commands = items.map((o) => o.command);
    const { rows: done } = await this.pool.query<{ id: string } & ({ message_id: string; routing_key: string; payload: unknown } | { message_id: null })>({
      name: "text_finish",
      text: FINISH_SQL,
      values: [
        items.map(({ record }) => record.id),
        items.map(({ record }) => record.ownerId),
        items.map(({ record }) => record.attempts),
        items.map((o) => o.state),
        items.map((o) => (o.state === "completed" ? JSON.stringify(o.result) : null)),
        items.map((o) => (o.state === "completed" ? o.cost : null)),
        items.map((o) => (o.state === "failed" ? JSON.stringify(o.error) : null)),
        commands.map((c) => c.params[0]),
        commands.map((c) => c.params[1]),
        commands.map((c) => c.params[2]),
        items.map((o) => o.grantSignature ?? null),
        DIRECT_PUBLISH_LEASE_MS,
      ],
    });
    const sent = done.flatMap((r) => (r.message_id === null ? [] : [{ message_id: r.message_id, routing_key: r.routing_key, payload: r.payload }]));
    if (sent.length > 0) this.publishNow(sent);
    const ids = new Set(done.map((r) => r.id));
    return items.map(({ record }) => ids.has(record.id));
  }

  async find(id: string): Promise<TextRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM text_requests WHERE id = $1", [id]);
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** A record with what only the operator sees: the providers that refused it, and when it became final. */
  async findForOperator(id: string): Promise<{ record: TextRecord; refused: string[]; completedAt: Date | null } | undefined> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM text_requests WHERE id = $1", [id]);
    const row = rows[0];
    return row ? { record: fromSql(row), refused: row.providers_refused, completedAt: row.completed_at } : undefined;
  }

  async findMany(ids: readonly string[]): Promise<TextRecord[]> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM text_requests WHERE id = ANY($1::uuid[])", [ids]);
    return rows.map(fromSql);
  }

  /**
   * Final records after the cursor, oldest first, for the books cross-check (the partial index on
   * finished records), each with billing's signature of the grant that covers it: its placement's, or
   * its allowance's with the amount granted.
   */
  async finalHolds(after: FinalHoldsCursor | null, limit: number): Promise<FinalHoldRow[]> {
    const { rows } = await this.pool.query<FinalHoldRow>(
      `SELECT t.id AS owner_ref, t.hold_id, t.organization_id, t.key_id, 'text' AS operation, t.model, t.estimated_cost, t.cost,
              t.state = 'completed' AS settles, t.completed_at, t.allowance_id,
              CASE WHEN t.allowance_id IS NULL THEN t.grant_signature ELSE a.grant_signature END AS grant_signature,
              a.granted AS allowance_granted
       FROM text_requests t LEFT JOIN allowances a ON a.id = t.allowance_id
       WHERE t.state IN ('completed', 'failed') AND ($1::timestamptz IS NULL OR (t.completed_at, t.id) > ($1::timestamptz, $2::uuid))
       ORDER BY t.completed_at, t.id
       LIMIT $3`,
      [after?.final_at ?? null, after?.owner_ref ?? null, limit],
    );
    return rows;
  }

  /**
   * Moves an unfinished record on, only from the owner and attempt the caller saw, so two drivers never
   * both act on it. Returns the record as it now is, or undefined if it moved on (or is gone).
   */
  async update(record: TextRecord, patch: { holdId?: string; attempts?: number; ownerId?: string; nextAttemptAt?: Date }): Promise<TextRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>(
      `UPDATE text_requests
       SET hold_id = COALESCE($4::uuid, hold_id), attempts = COALESCE($5::int, attempts), owner_id = COALESCE($6::uuid, owner_id),
           next_attempt_at = COALESCE($7::timestamptz, next_attempt_at), updated_at = now()
       WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3
       RETURNING *`,
      [record.id, record.ownerId, record.attempts, patch.holdId ?? null, patch.attempts ?? null, patch.ownerId ?? null, patch.nextAttemptAt ?? null],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** Moves an unfinished record to a fresh hold id (its own was used up), as update does; undefined if it moved on. */
  moveHold(record: TextRecord, holdId: string): Promise<TextRecord | undefined> {
    return this.update(record, { holdId });
  }

  /**
   * Records the provider the request is about to be sent to, and those that refused it, only from the
   * owner and attempt the caller saw (as update does). False if the record moved on.
   */
  async route(record: TextRecord, provider: string, refused: readonly string[]): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE text_requests SET provider = $4, providers_refused = $5::text[], updated_at = now()
       WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3`,
      [record.id, record.ownerId, record.attempts, provider, refused],
    );
    return rowCount === 1;
  }

  /**
   * A request refused before anything was reserved leaves no trace: a retry with its key starts afresh.
   * Only from the owner and attempt the caller saw; false if the record moved on.
   */
  async forget(record: TextRecord): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "DELETE FROM text_requests WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3 AND allowance_id IS NULL",
      [record.id, record.ownerId, record.attempts],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Unfinished records this process may take up: its own whose time has come and that nothing in it is
   * driving (the caller checks memory), and those of processes whose heartbeat stopped (at once, whatever
   * their time: their owner is gone). Served by the partial index on unfinished records, however many
   * finished ones there are.
   */
  async due(workerId: string, staleMs: number, limit: number): Promise<TextRecord[]> {
    const { rows } = await this.pool.query<SqlRow>(
      `SELECT r.* FROM text_requests r
       LEFT JOIN workers w ON w.id = r.owner_id
       WHERE r.state = 'reserving'
         AND ((r.owner_id = $1 AND r.next_attempt_at <= now())
              OR (r.owner_id IS DISTINCT FROM $1 AND (w.id IS NULL OR w.heartbeat_at < now() - $2::float8 * interval '1 millisecond')))
       ORDER BY r.next_attempt_at
       LIMIT $3`,
      [workerId, staleMs, limit],
    );
    return rows.map(fromSql);
  }

  async heartbeat(workerId: string): Promise<void> {
    await this.pool.query("INSERT INTO workers (id, started_at, heartbeat_at) VALUES ($1, now(), now()) ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()", [
      workerId,
    ]);
  }

  async retire(workerId: string): Promise<void> {
    await this.pool.query("DELETE FROM workers WHERE id = $1", [workerId]);
  }

  /**
   * Drops final records past the idempotency retention, a bounded chunk per statement so the purge
   * never holds locks or builds a huge transaction, and workers long gone.
   */
  async purge(retentionMs: number): Promise<number> {
    const purged = await deleteInChunks(
      this.pool,
      "text_requests",
      "state IN ('completed', 'failed') AND completed_at < now() - $1::float8 * interval '1 millisecond'",
      [retentionMs],
    );
    await this.pool.query("DELETE FROM workers WHERE heartbeat_at < now() - interval '1 day'");
    return purged;
  }
}

/**
 * An allowance (alias `a`) a request may be placed on: open, within its budget day, and held by the
 * placing process (`owner`: an SQL expression or subquery of its id). The claim and the move of a
 * refused request both lock it with this test (docs/api.md, "Allowances").
 */
function usableAllowance(owner: string): string {
  return `a.state = 'open' AND a.usable_until > now() AND a.owner_id IN (${owner})`;
}

/**
 * The claim of a batch (insertClaims): typed arrays, one per column, unnested into rows, as a named
 * prepared statement, so PostgreSQL parses and plans it once per connection instead of decoding a
 * JSON document and planning the statement for every batch (docs/benchmarks.md, "Issue 32").
 */
const CLAIM_SQL = `WITH x AS MATERIALIZED (
   SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
     $10::text[], $11::bigint[], $12::uuid[], $13::uuid[], $14::int[], $15::uuid[], $16::timestamptz[], $17::timestamptz[])
     AS x(id, key_id, user_id, organization_id, endpoint, idempotency_key, request_id, fingerprint, model, plan, estimated_cost, hold_id,
       allowance_id, attempts, owner_id, next_attempt_at, created_at)
 ), usable AS (
   SELECT a.id FROM allowances a
   WHERE a.id IN (SELECT allowance_id FROM x) AND ${usableAllowance("SELECT owner_id FROM x WHERE x.allowance_id = a.id")}
   ORDER BY a.id
   FOR UPDATE
 ), ins AS (
   INSERT INTO text_requests (id, key_id, user_id, organization_id, endpoint, idempotency_key, request_id, fingerprint, model, plan,
     estimated_cost, hold_id, allowance_id, state, attempts, owner_id, next_attempt_at, created_at, updated_at)
   SELECT x.id, x.key_id, x.user_id, x.organization_id, x.endpoint, x.idempotency_key, x.request_id, x.fingerprint, x.model, x.plan,
     x.estimated_cost, x.hold_id, x.allowance_id, 'reserving', x.attempts, x.owner_id, x.next_attempt_at, x.created_at, x.created_at
   FROM x
   WHERE x.allowance_id IS NULL OR x.allowance_id IN (SELECT id FROM usable)
   ON CONFLICT (key_id, endpoint, idempotency_key) DO NOTHING
   RETURNING id, allowance_id, estimated_cost
 ), spent AS (
   UPDATE allowances a SET used = a.used + s.total, requests = a.requests + s.n, last_used_at = now()
   FROM (SELECT allowance_id, sum(estimated_cost) AS total, count(*)::int AS n FROM ins WHERE allowance_id IS NOT NULL GROUP BY allowance_id) s
   WHERE a.id = s.allowance_id
 )
 SELECT (SELECT array_agg(id)::text[] FROM ins) AS inserted, (SELECT array_agg(id)::text[] FROM usable) AS open`;

/**
 * The final outcomes of a batch with their hold commands (writeFinals): typed arrays, prepared, as the
 * claim. The commands' outbox rows come back to be published at once after the commit, and are due for
 * the relay's poll only $12 ms later (DIRECT_PUBLISH_LEASE_MS). Each keeps billing's signature of the placement its attempt got (none on an allowance: the
 * allowance's covers it), for the books cross-check.
 */
const FINISH_SQL = `WITH done AS (
   UPDATE text_requests t
   SET state = x.state::text_request_state, result = x.result, cost = x.cost, error = x.error, completed_at = now(), updated_at = now(),
       grant_signature = COALESCE(x.grant_signature, t.grant_signature)
   FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::uuid[], $9::text[], $10::text[], $11::text[])
     AS x(id, owner_id, attempts, state, result, cost, error, message_id, routing_key, payload, grant_signature)
   WHERE t.id = x.id AND t.state = 'reserving' AND t.owner_id IS NOT DISTINCT FROM x.owner_id AND t.attempts = x.attempts
   RETURNING t.id, x.message_id, x.routing_key, x.payload
 ), sent AS (
   INSERT INTO outbox_messages (message_id, routing_key, payload, available_at)
   SELECT message_id, routing_key, payload::jsonb, now() + $12::float8 * interval '1 millisecond' FROM done
   ON CONFLICT (message_id) DO NOTHING
   RETURNING message_id, routing_key, payload
 )
 SELECT d.id, s.message_id::text AS message_id, s.routing_key, s.payload FROM done d LEFT JOIN sent s ON s.message_id = d.message_id`;

/** What became of a claim: inserted, its key already taken, or its allowance no longer open. */
type ClaimResult = "inserted" | "taken" | "allowance_closed";

/** A text_requests row as pg returns it, typed from schema.prisma's TextRequest (no hand-written twin). */
type SqlRow = PgRow<TextRequest>;

function fromSql(row: SqlRow): TextRecord {
  return {
    ...ownedRecordOf(row),
    endpoint: row.endpoint as TextRecord["endpoint"],
    operation: "text",
    plan: JSON.parse(row.plan) as TextPlan,
    allowanceId: row.allowance_id,
    state: row.state,
    result: row.result === null ? null : (JSON.parse(row.result) as TextResult),
    cost: row.cost === null ? null : toMicrorub(row.cost),
    error: row.error === null ? null : (JSON.parse(row.error) as StoredError),
    provider: row.provider,
  };
}
