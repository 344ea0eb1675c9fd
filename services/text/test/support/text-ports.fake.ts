import { randomUUID } from "node:crypto";
import type { Allocator } from "@meter/allowances";
import type { Hold, PlaceHoldRequest } from "@meter/contracts";
import type { BillingClient } from "@meter/service-clients";
import type { CommittedOutcome } from "../../src/domain/final-command";
import type { NewTextRecord, TextPlan, TextRecord } from "../../src/domain/text-record";
import type { ChatProvider, ChatRequest, ChatResult } from "@meter/upstreams";
import type { TextRequestRepository } from "../../src/repositories/text-request.repository";

/**
 * In-memory fakes at the ports of TextRunner and TextRequestService, for their unit tests: each keeps
 * the guards of the real one (a record moves on only from the owner and attempt that saw it), records
 * what it was asked, and answers what the test queued.
 */

type Repo = Pick<TextRequestRepository, "claim" | "finish" | "find" | "update" | "moveHold" | "forget" | "moveToAllowance" | "route">;

export class FakeTextRepository implements Repo {
  readonly records = new Map<string, TextRecord>();
  readonly finals: CommittedOutcome[] = [];
  readonly forgotten: string[] = [];
  /** Throws from the next finish() calls (a database that is down), then behaves. */
  failFinishes = 0;
  /** What the next claim on an allowance answers when the allowance is no longer open. */
  allowanceClosed = false;
  /** Throws from moveToAllowance (whether it moved is not known). */
  failMove = false;

  async claim(record: NewTextRecord): Promise<{ record: TextRecord; created: boolean } | { allowanceClosed: true }> {
    const existing = [...this.records.values()].find(
      (r) => r.keyId === record.keyId && r.endpoint === record.endpoint && r.idempotencyKey === record.idempotencyKey,
    );
    if (existing) return { record: existing, created: false };
    if (record.allowanceId !== null && this.allowanceClosed) return { allowanceClosed: true };
    const created: TextRecord = { ...record, state: "reserving", result: null, cost: null, error: null };
    this.records.set(record.id, created);
    return { record: created, created: true };
  }

  async finish(outcome: CommittedOutcome): Promise<boolean> {
    if (this.failFinishes > 0) {
      this.failFinishes--;
      throw new Error("database unavailable");
    }
    const current = this.current(outcome.record);
    if (!current) return false;
    this.finals.push(outcome);
    this.records.set(current.id, {
      ...current,
      state: outcome.state,
      result: outcome.state === "completed" ? outcome.result : null,
      cost: outcome.state === "completed" ? outcome.cost : null,
      error: outcome.state === "failed" ? outcome.error : null,
    });
    return true;
  }

  async find(id: string): Promise<TextRecord | undefined> {
    return this.records.get(id);
  }

  async update(record: TextRecord, patch: { holdId?: string; attempts?: number; ownerId?: string; nextAttemptAt?: Date }): Promise<TextRecord | undefined> {
    const current = this.current(record);
    if (!current) return undefined;
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    const next = { ...current, ...defined };
    this.records.set(next.id, next);
    return next;
  }

  moveHold(record: TextRecord, holdId: string): Promise<TextRecord | undefined> {
    return this.update(record, { holdId });
  }

  async forget(record: TextRecord): Promise<boolean> {
    const current = this.current(record);
    if (!current || current.allowanceId !== null) return false;
    this.records.delete(record.id);
    this.forgotten.push(record.id);
    return true;
  }

  async moveToAllowance(record: TextRecord, allowanceId: string, holdId: string): Promise<TextRecord | undefined> {
    if (this.failMove) throw new Error("connection lost");
    const current = this.current(record);
    if (!current || current.allowanceId !== null || this.allowanceClosed) return undefined;
    const moved = { ...current, allowanceId, holdId };
    this.records.set(moved.id, moved);
    return moved;
  }

  async route(record: TextRecord, provider: string): Promise<boolean> {
    const current = this.current(record);
    if (!current) return false;
    this.records.set(current.id, { ...current, provider });
    return true;
  }

  /** The stored record, if it is still the one the caller saw (reserving, same owner and attempt). */
  private current(seen: TextRecord): TextRecord | undefined {
    const r = this.records.get(seen.id);
    return r && r.state === "reserving" && r.ownerId === seen.ownerId && r.attempts === seen.attempts ? r : undefined;
  }
}

/** One queued answer of billing to a placement: the hold's status, or a thrown error. */
export type PlacementAnswer = Hold["status"] | Error;

export class FakeBilling implements Pick<BillingClient, "placeHold" | "release"> {
  readonly placed: PlaceHoldRequest[] = [];
  readonly released: { holdId: string; reason: string }[] = [];
  /** Answers of the next placements, in order; then every placement is held. */
  readonly placements: PlacementAnswer[] = [];
  /** Throws from the next release() calls. */
  failReleases = 0;

  async placeHold(request: PlaceHoldRequest): Promise<Hold> {
    this.placed.push(request);
    const answer = this.placements.shift() ?? "active";
    if (answer instanceof Error) throw answer;
    return holdOf(request, answer);
  }

  async release(holdId: string, reason: string): Promise<Hold> {
    if (this.failReleases > 0) {
      this.failReleases--;
      throw new Error("billing unreachable");
    }
    this.released.push({ holdId, reason });
    return holdOf({ hold_id: holdId, key_id: null, amount_microrub: 0 }, "released");
  }
}

function holdOf(request: { hold_id: string; key_id: string | null; amount_microrub: number }, status: Hold["status"]): Hold {
  return {
    hold_id: request.hold_id,
    organization_id: null,
    key_id: request.key_id,
    status,
    amount_microrub: request.amount_microrub,
    settled_microrub: null,
    operation: "text",
    model: null,
    source: "text",
    owner_ref: null,
    budget_day: null,
    created_at: new Date().toISOString(),
    resolved_at: null,
  };
}

/** An upstream answering what was queued: a result, an error to throw, or a promise to wait on. */
export class FakeProvider implements ChatProvider {
  readonly calls: ChatRequest[] = [];
  readonly answers: (ChatResult | Error | Promise<ChatResult>)[] = [];

  async complete(request: ChatRequest): Promise<ChatResult> {
    this.calls.push(request);
    const answer = this.answers.shift() ?? { text: "hello", stopReason: "end_turn", usage: { input_tokens: 10, output_tokens: 5 } };
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

/** This process's allowances as the runner and the request service use them: one allowance, with `room` left. */
export class FakeAllowances implements Pick<Allocator, "take" | "takeIfRoom" | "giveBack" | "whenGranted"> {
  readonly id = randomUUID();
  readonly givenBack: { id: string; estimate: number; stillOpen: boolean }[] = [];
  constructor(public room: number) {}

  take(_key: { keyId: string }, estimate: number): string | null {
    return this.takeIfRoom("", estimate);
  }

  takeIfRoom(_keyId: string, estimate: number): string | null {
    if (estimate > this.room) return null;
    this.room -= estimate;
    return this.id;
  }

  giveBack(id: string, estimate: number, stillOpen: boolean): void {
    this.givenBack.push({ id, estimate, stillOpen });
    this.room += estimate;
  }

  async whenGranted(): Promise<void> {}
}

/** A request priced at 1 microrub per input and 3 per output token, 100 tokens at most: estimate 300 + input. */
export const tariff = { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 };

export function newTextRecord(over: Partial<NewTextRecord> = {}): NewTextRecord {
  const id = over.id ?? randomUUID();
  const plan: TextPlan = {
    endpoint: "messages",
    model: "m",
    provider: { kind: "anthropic", base_url: "http://upstream", upstream_model: "claude-x" },
    tariff,
    request: { model: "claude-x", messages: [{ role: "user", text: "hi" }], maxTokens: 100 },
    inputTokensEstimate: 14,
    estimatedCost: 314,
  };
  return {
    id,
    holdId: id,
    allowanceId: null,
    keyId: randomUUID(),
    userId: randomUUID(),
    organizationId: randomUUID(),
    endpoint: "messages",
    operation: "text",
    idempotencyKey: randomUUID(),
    requestId: randomUUID(),
    fingerprint: "f",
    model: "m",
    plan,
    estimatedCost: plan.estimatedCost,
    attempts: 1,
    ownerId: randomUUID(),
    nextAttemptAt: new Date(Date.now() + 60_000),
    createdAt: new Date(),
    ...over,
  };
}
