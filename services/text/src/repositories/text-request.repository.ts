import { toMicrorub } from "@meter/contracts";
import type { Db } from "../db";
import { Prisma, type TextRequest as Row, type TextRequestState } from "../generated/prisma/client";
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
  "id" | "keyId" | "userId" | "organizationId" | "endpoint" | "idempotencyKey" | "fingerprint" | "model" | "plan" | "estimatedCost" | "holdId" | "ownerId"
>;

export type TextPatch = Partial<Pick<TextRecord, "state" | "result" | "cost" | "error" | "attempts" | "ownerId" | "nextAttemptAt" | "holdId">>;

const FINAL: TextState[] = ["completed", "failed"];

export class TextRequestRepository {
  constructor(private readonly db: Db) {}

  /** Inserts the record unless (key, endpoint, Idempotency-Key) is taken; returns the one that holds it. */
  async claim(record: NewTextRecord): Promise<{ record: TextRecord; created: boolean }> {
    // The creation time is part of the answer (Responses' created_at), so it is fixed here, not by the database.
    const now = new Date();
    const { count } = await this.db.textRequest.createMany({
      data: [
        {
          ...record,
          createdAt: now,
          nextAttemptAt: now,
          plan: record.plan as unknown as Prisma.InputJsonValue,
          estimatedCost: BigInt(record.estimatedCost),
          state: "reserving",
        },
      ],
      skipDuplicates: true,
    });
    if (count === 1) {
      return {
        created: true,
        record: { ...record, state: "reserving", result: null, cost: null, error: null, attempts: 0, nextAttemptAt: now, createdAt: now },
      };
    }
    const existing = await this.db.textRequest.findUnique({
      where: { keyId_endpoint_idempotencyKey: { keyId: record.keyId, endpoint: record.endpoint, idempotencyKey: record.idempotencyKey } },
    });
    // Deleted in between (a refusal frees its key): claim again.
    if (!existing) return this.claim(record);
    return { record: toRecord(existing), created: false };
  }

  async find(id: string): Promise<TextRecord | undefined> {
    const row = await this.db.textRequest.findUnique({ where: { id } });
    return row ? toRecord(row) : undefined;
  }

  /** Moves a record on only from the state the caller saw, so two runners can never both act on it. */
  async transition(record: TextRecord, patch: TextPatch): Promise<TextRecord | undefined> {
    const data: Prisma.TextRequestUpdateManyMutationInput = {
      ...(patch.state !== undefined ? { state: patch.state } : {}),
      ...(patch.result !== undefined ? { result: patch.result as unknown as Prisma.InputJsonValue } : {}),
      ...(patch.cost !== undefined && patch.cost !== null ? { cost: BigInt(patch.cost) } : {}),
      ...(patch.error !== undefined ? { error: patch.error as unknown as Prisma.InputJsonValue } : {}),
      ...(patch.attempts !== undefined ? { attempts: patch.attempts } : {}),
      ...(patch.holdId !== undefined ? { holdId: patch.holdId } : {}),
      ...(patch.ownerId !== undefined ? { ownerId: patch.ownerId } : {}),
      ...(patch.nextAttemptAt !== undefined ? { nextAttemptAt: patch.nextAttemptAt } : {}),
      ...(patch.state && FINAL.includes(patch.state) ? { completedAt: new Date() } : {}),
    };
    const { count } = await this.db.textRequest.updateMany({ where: { id: record.id, state: record.state, ownerId: record.ownerId }, data });
    return count === 1 ? { ...record, ...patch } : undefined;
  }

  /** A request refused before anything was reserved leaves no trace: a retry with its key starts afresh. */
  async forget(record: TextRecord): Promise<void> {
    await this.db.textRequest.deleteMany({ where: { id: record.id, state: "reserving" } });
  }

  /**
   * Unfinished records due for work that this process may take: its own that nothing in memory is
   * driving, and those of processes whose heartbeat stopped.
   */
  async due(workerId: string, staleMs: number, limit: number): Promise<TextRecord[]> {
    const ids = await this.db.$queryRaw<{ id: string }[]>`
      SELECT r.id FROM text_requests r
      LEFT JOIN workers w ON w.id = r.owner_id
      WHERE r.state NOT IN ('completed', 'failed')
        AND r.next_attempt_at <= now()
        AND (r.owner_id = ${workerId}::uuid OR r.owner_id IS NULL OR w.id IS NULL
             OR w.heartbeat_at < now() - ${staleMs}::float8 * interval '1 millisecond')
      ORDER BY r.next_attempt_at
      LIMIT ${limit}`;
    if (ids.length === 0) return [];
    const rows = await this.db.textRequest.findMany({ where: { id: { in: ids.map((r) => r.id) } } });
    return rows.map(toRecord);
  }

  async heartbeat(workerId: string): Promise<void> {
    await this.db.worker.upsert({ where: { id: workerId }, create: { id: workerId }, update: { heartbeatAt: new Date() } });
  }

  async retire(workerId: string): Promise<void> {
    await this.db.worker.deleteMany({ where: { id: workerId } });
  }

  /** Drops final records past the idempotency retention, and workers long gone. */
  async purge(retentionMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - retentionMs);
    const { count } = await this.db.textRequest.deleteMany({ where: { state: { in: FINAL }, completedAt: { lt: cutoff } } });
    await this.db.worker.deleteMany({ where: { heartbeatAt: { lt: new Date(Date.now() - 86_400_000) } } });
    return count;
  }
}

function toRecord(row: Row): TextRecord {
  return {
    id: row.id,
    keyId: row.keyId,
    userId: row.userId,
    organizationId: row.organizationId,
    endpoint: row.endpoint,
    idempotencyKey: row.idempotencyKey,
    fingerprint: row.fingerprint,
    model: row.model,
    plan: row.plan as unknown as TextPlan,
    estimatedCost: toMicrorub(row.estimatedCost),
    holdId: row.holdId,
    state: row.state,
    result: row.result as unknown as TextResult | null,
    cost: row.cost === null ? null : toMicrorub(row.cost),
    error: row.error as unknown as StoredError | null,
    attempts: row.attempts,
    ownerId: row.ownerId,
    nextAttemptAt: row.nextAttemptAt,
    createdAt: row.createdAt,
  };
}
