import { deleteInChunks, type PgRow } from "@meter/service-kit";
import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { toMicrorub, type FinalHoldsCursor, type MediaOperation } from "@meter/contracts";
import { ownedRecordOf, type FinalHoldRow } from "@meter/hold-client";
import { outboxInsertSql } from "@meter/messaging";
import type { CommittedOutcome } from "../domain/final-command";
import type { JobEndpoint, JobPlan, JobRecord, NewJobRecord, StoredError, StoredResult, UpstreamUsage } from "../domain/job-record";
import type { MediaJob } from "../generated/prisma/client";
import type { Progress } from "@meter/media-engines";

/**
 * Media jobs: raw SQL on the pool. Every change of state is guarded by the state, owner and attempt the
 * caller saw, so two processes acting on one job never both succeed; the loser re-reads the job. A
 * change that must reach another process (a job for a worker, a hold command for billing) is written to
 * the outbox in the same statement as the state it belongs to.
 *
 * JSON goes into `text` columns, not `jsonb`: JSON.stringify escapes every character (U+0000 included,
 * which jsonb refuses), so any input text or file name can be stored.
 */
export class JobRepository {
  constructor(
    private readonly pool: Pool,
    /** A queued job no worker took this long has its message sent again. */
    private readonly requeueAfterMs: number,
  ) {}

  /** Inserts the job unless its id (its idempotency key) is taken; returns the one that holds it. */
  async claim(job: NewJobRecord): Promise<{ job: JobRecord; created: boolean }> {
    for (;;) {
      const { rows } = await this.pool.query<{ id: string }>(
        `INSERT INTO media_jobs (id, key_id, user_id, organization_id, endpoint, idempotency_key, request_id, fingerprint, operation, model,
           plan, estimated_cost, hold_id, state, progress, attempts, owner_id, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'reserving', $14, $15, $16, $17, $18)
         ON CONFLICT (id) DO NOTHING
         RETURNING id`,
        [
          job.id,
          job.keyId,
          job.userId,
          job.organizationId,
          job.endpoint,
          job.idempotencyKey,
          job.requestId,
          job.fingerprint,
          job.operation,
          job.model,
          JSON.stringify(job.plan),
          job.estimatedCost,
          job.holdId,
          JSON.stringify(job.progress),
          job.attempts,
          job.ownerId,
          job.nextAttemptAt,
          job.createdAt,
        ],
      );
      if (rows.length > 0) {
        return {
          created: true,
          job: {
            ...job,
            state: "reserving",
            result: null,
            quantity: null,
            cost: null,
            error: null,
            queuedAt: null,
            startedAt: null,
            completedAt: null,
            provider: null,
            upstreamUsage: null,
          },
        };
      }
      const existing = await this.find(job.id);
      // Deleted in between (a refusal frees its key): claim again.
      if (existing) return { job: existing, created: false };
    }
  }

  async find(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM media_jobs WHERE id = $1", [id]);
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  async findForUser(userId: string, id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM media_jobs WHERE id = $1 AND user_id = $2", [id, userId]);
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  async findMany(ids: readonly string[]): Promise<JobRecord[]> {
    const { rows } = await this.pool.query<SqlRow>("SELECT * FROM media_jobs WHERE id = ANY($1::uuid[])", [ids]);
    return rows.map(fromSql);
  }

  /** Final jobs after the cursor, oldest first, with billing's signature of each one's placement, for the books cross-check (the partial index on finished jobs). */
  async finalHolds(after: FinalHoldsCursor | null, limit: number): Promise<FinalHoldRow[]> {
    const { rows } = await this.pool.query<FinalHoldRow>(
      `SELECT id AS owner_ref, hold_id, organization_id, key_id, operation, model, estimated_cost, cost,
              state = 'succeeded' AS settles, completed_at, grant_signature
       FROM media_jobs
       WHERE state IN ('succeeded', 'failed') AND ($1::timestamptz IS NULL OR (completed_at, id) > ($1::timestamptz, $2::uuid))
       ORDER BY completed_at, id
       LIMIT $3`,
      [after?.final_at ?? null, after?.owner_ref ?? null, limit],
    );
    return rows;
  }

  /**
   * A user's jobs of the given operations, newest first, after the job `after` (the last of the
   * previous page); one more than `limit` is read to know whether there are more.
   */
  async listForUser(
    userId: string,
    operations: readonly MediaOperation[],
    limit: number,
    after: { createdAt: Date; id: string } | undefined,
  ): Promise<{ jobs: JobRecord[]; hasMore: boolean }> {
    const { rows } = await this.pool.query<SqlRow>(
      `SELECT * FROM media_jobs
       WHERE user_id = $1 AND operation = ANY($2::text[])
         AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
       ORDER BY created_at DESC, id DESC
       LIMIT $5`,
      [userId, operations, after?.createdAt ?? null, after?.id ?? null, limit + 1],
    );
    return { jobs: rows.slice(0, limit).map(fromSql), hasMore: rows.length > limit };
  }

  /** Moves a reserving job to a fresh hold id (its own was used up); undefined if it moved on. */
  async moveHold(job: JobRecord, holdId: string): Promise<JobRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>(
      `UPDATE media_jobs SET hold_id = $4, updated_at = now()
       WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3
       RETURNING *`,
      [job.id, job.ownerId, job.attempts, holdId],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /**
   * The hold is placed: the job is queued and its message written, in one commit, so a job is queued
   * if and only if a worker will hear of it. Runs are counted from here. billing's signature of the
   * placement is kept with the job, for the books cross-check.
   */
  async markQueued(job: JobRecord, grantSignature: string | null): Promise<JobRecord | undefined> {
    const message = jobMessage(job.id);
    const { rows } = await this.pool.query<SqlRow>(
      `WITH queued AS (
         UPDATE media_jobs
         SET state = 'queued', owner_id = NULL, attempts = 0, queued_at = now(), updated_at = now(),
             next_attempt_at = now() + $4::float8 * interval '1 millisecond', grant_signature = $8
         WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3
         RETURNING *
       ), sent AS (
         INSERT INTO outbox_messages (message_id, routing_key, payload)
         SELECT $5::uuid, $6, $7::jsonb FROM queued
       )
       SELECT * FROM queued`,
      [job.id, job.ownerId, job.attempts, this.requeueAfterMs, ...message, grantSignature],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** A reserving job refused before anything was reserved leaves no trace: its key may be used again. */
  async forget(job: JobRecord): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "DELETE FROM media_jobs WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3",
      [job.id, job.ownerId, job.attempts],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * A worker takes a queued job: one claimant wins, and the run is counted before any work. Its lease
   * runs out `leaseMs` from now unless renewed.
   */
  async claimRun(id: string, workerId: string, leaseMs: number, now: Date): Promise<JobRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>(
      `UPDATE media_jobs
       SET state = 'running', owner_id = $2, attempts = attempts + 1, started_at = COALESCE(started_at, $4), updated_at = now(),
           next_attempt_at = now() + $3::float8 * interval '1 millisecond'
       WHERE id = $1 AND state = 'queued'
       RETURNING *`,
      [id, workerId, leaseMs, now],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** Takes over a reserving job whose admission stopped (its lease ran out), counting the attempt. */
  async takeOverReservation(job: JobRecord, workerId: string, leaseMs: number): Promise<JobRecord | undefined> {
    const { rows } = await this.pool.query<SqlRow>(
      `UPDATE media_jobs
       SET owner_id = $4, attempts = attempts + 1, updated_at = now(), next_attempt_at = now() + $5::float8 * interval '1 millisecond'
       WHERE id = $1 AND state = 'reserving' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3 AND next_attempt_at <= now()
       RETURNING *`,
      [job.id, job.ownerId, job.attempts, workerId, leaseMs],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /**
   * Records the upstream provider a running job's call is about to be sent to, and those that refused it,
   * only from the owner and attempt the caller saw (as renewLease). False if the job moved on.
   */
  async route(job: JobRecord, provider: string, refused: readonly string[]): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE media_jobs SET provider = $4, providers_refused = $5::text[], updated_at = now()
       WHERE id = $1 AND state = 'running' AND owner_id = $2 AND attempts = $3`,
      [job.id, job.ownerId, job.attempts, provider, refused],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Extends the lease of a job this worker runs; false when it is no longer this worker's. */
  async renewLease(job: JobRecord, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE media_jobs SET next_attempt_at = now() + $4::float8 * interval '1 millisecond', updated_at = now()
       WHERE id = $1 AND state = 'running' AND owner_id = $2 AND attempts = $3`,
      [job.id, job.ownerId, job.attempts, leaseMs],
    );
    return (rowCount ?? 0) > 0;
  }

  async saveProgress(job: JobRecord, progress: Progress): Promise<void> {
    await this.pool.query("UPDATE media_jobs SET progress = $4 WHERE id = $1 AND state = 'running' AND owner_id = $2 AND attempts = $3", [
      job.id,
      job.ownerId,
      job.attempts,
      JSON.stringify(progress),
    ]);
  }

  /**
   * Gives a running job back to the queue: its worker could not finish it (a dependency failed) and the
   * message will come back, or its worker died (the lease ran out) and a new message is written here.
   */
  async requeue(job: JobRecord, opts: { sendMessage: boolean }): Promise<JobRecord | undefined> {
    const message = opts.sendMessage ? jobMessage(job.id) : [null, null, null];
    const { rows } = await this.pool.query<SqlRow>(
      `WITH requeued AS (
         UPDATE media_jobs
         SET state = 'queued', owner_id = NULL, updated_at = now(), next_attempt_at = now() + $4::float8 * interval '1 millisecond'
         WHERE id = $1 AND state = 'running' AND owner_id IS NOT DISTINCT FROM $2::uuid AND attempts = $3
         RETURNING *
       ), sent AS (
         INSERT INTO outbox_messages (message_id, routing_key, payload)
         SELECT $5::uuid, $6, $7::jsonb FROM requeued WHERE $5::uuid IS NOT NULL
       )
       SELECT * FROM requeued`,
      [job.id, job.ownerId, job.attempts, this.requeueAfterMs, ...message],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /** A queued job no worker took in time (its message lost or dead-lettered) gets a new message. */
  async resend(job: JobRecord): Promise<boolean> {
    const { rows } = await this.pool.query(
      `WITH resent AS (
         UPDATE media_jobs SET next_attempt_at = now() + $3::float8 * interval '1 millisecond', updated_at = now()
         WHERE id = $1 AND state = 'queued' AND attempts = $2 AND next_attempt_at <= now()
         RETURNING id
       ), sent AS (
         INSERT INTO outbox_messages (message_id, routing_key, payload)
         SELECT $4::uuid, $5, $6::jsonb FROM resent
       )
       SELECT id FROM resent`,
      [job.id, job.attempts, this.requeueAfterMs, ...jobMessage(job.id)],
    );
    return rows.length > 0;
  }

  /**
   * Makes a job final together with the command that resolves its hold, in one commit: `succeeded` with
   * its result and a `billing.hold.settle`, or `failed` with its error and a `billing.hold.release`. The
   * outbox relay then hands the command to billing, which applies it exactly once. Only from the state,
   * owner and attempt the caller saw; undefined if the job moved on meanwhile.
   */
  async finish(outcome: CommittedOutcome): Promise<JobRecord | undefined> {
    const { job, command } = outcome;
    const { rows } = await this.pool.query<SqlRow>(
      `WITH done AS (
         UPDATE media_jobs
         SET state = $5::text::media_job_state, result = $6, quantity = $7, cost = $8, error = $9, owner_id = NULL,
             completed_at = now(), updated_at = now(), progress = COALESCE($10, progress), upstream_usage = $14
         WHERE id = $1 AND state = $2::text::media_job_state AND owner_id IS NOT DISTINCT FROM $3::uuid AND attempts = $4
         RETURNING *
       ), sent AS (
         INSERT INTO outbox_messages (message_id, routing_key, payload)
         SELECT $11::uuid, $12, $13::jsonb FROM done
         ON CONFLICT (message_id) DO NOTHING
       )
       SELECT * FROM done`,
      [
        job.id,
        job.state,
        job.ownerId,
        job.attempts,
        outcome.state,
        outcome.state === "succeeded" ? JSON.stringify(outcome.result) : null,
        outcome.state === "succeeded" ? outcome.quantity : null,
        outcome.state === "succeeded" ? outcome.cost : null,
        outcome.state === "failed" ? JSON.stringify(outcome.error) : null,
        outcome.state === "succeeded" ? JSON.stringify(outcome.progress) : null,
        ...command.params,
        outcome.state === "succeeded" && outcome.upstreamUsage ? JSON.stringify(outcome.upstreamUsage) : null,
      ],
    );
    return rows[0] ? fromSql(rows[0]) : undefined;
  }

  /**
   * Jobs nobody is moving on: reserving or running jobs whose owner's lease ran out, and queued jobs no
   * worker took in time. Served by the partial index on unfinished jobs.
   */
  async due(limit: number): Promise<JobRecord[]> {
    const { rows } = await this.pool.query<SqlRow>(
      `SELECT * FROM media_jobs
       WHERE state IN ('reserving', 'queued', 'running') AND next_attempt_at <= now()
       ORDER BY next_attempt_at
       LIMIT $1`,
      [limit],
    );
    return rows.map(fromSql);
  }

  /** Drops final jobs past retention, a bounded chunk per statement, so the purge never holds locks long. */
  async purge(retentionMs: number): Promise<number> {
    return deleteInChunks(this.pool, "media_jobs", "state IN ('succeeded', 'failed') AND completed_at < now() - $1::float8 * interval '1 millisecond'", [
      retentionMs,
    ]);
  }
}

/** A job's message: a fresh id each time, since the same job may need to be announced again. */
function jobMessage(jobId: string): [string, string, string] {
  return outboxInsertSql("media.job.requested", { version: "v1", job_id: jobId }, randomUUID()).params;
}

/** A media_jobs row as pg returns it, typed from schema.prisma's MediaJob (no hand-written twin). */
type SqlRow = PgRow<MediaJob>;

function fromSql(row: SqlRow): JobRecord {
  return {
    ...ownedRecordOf(row),
    endpoint: row.endpoint as JobEndpoint,
    operation: row.operation as MediaOperation,
    plan: JSON.parse(row.plan) as JobPlan,
    state: row.state,
    progress: JSON.parse(row.progress) as Progress,
    result: row.result === null ? null : (JSON.parse(row.result) as StoredResult),
    quantity: row.quantity,
    cost: row.cost === null ? null : toMicrorub(row.cost),
    error: row.error === null ? null : (JSON.parse(row.error) as StoredError),
    provider: row.provider,
    upstreamUsage: row.upstream_usage === null ? null : (JSON.parse(row.upstream_usage) as UpstreamUsage),
    queuedAt: row.queued_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
  };
}
