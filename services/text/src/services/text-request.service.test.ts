import type { CatalogModel, KeyIdentity } from "@meter/contracts";
import { AppError, createLogger } from "@meter/service-kit";
import type { TextRecord } from "../domain/text-record";
import { holdRequestOf, Refused } from "@meter/hold-client";
import { withHoldCommand } from "../domain/final-command";
import type { TextRunner } from "./text-runner";
import { TextRequestService, type TextRequestDeps } from "./text-request.service";
import { normalizeMessages } from "./text-plan";
import { FakeAllowances, FakeBilling, FakeTextRepository, tariff } from "../../test/support/text-ports.fake";

/**
 * Accepting a request (text-request.service.ts), with fakes at its ports: where its hold is placed (an
 * allowance in the claim's commit, or billing alongside the claim), what a duplicate gets, and how the
 * runner's outcome is answered within the synchronous window.
 */
const logger = createLogger("text-request-test", "silent");
const model: CatalogModel = {
  id: "m",
  enabled: true,
  display_name: null,
  provider: { kind: "anthropic", base_url: "http://upstream", upstream_model: "claude-x" },
  operations: { text: tariff },
  created_at: "",
  updated_at: "",
};
const identity: KeyIdentity = {
  key_id: "00000000-0000-4000-8000-00000000000a",
  user_id: "00000000-0000-4000-8000-00000000000b",
  organization_id: "00000000-0000-4000-8000-00000000000c",
} as KeyIdentity;
const body = { model: "m", max_tokens: 100, messages: [{ role: "user" as const, content: "hi" }] };
// 14 input tokens (conservative) at 1 microrub + 100 output at 3.
const ESTIMATE = 314;

/** A runner that answers what the test says (by default: completes the record), and records what it was asked to drive. */
class FakeRunner implements Pick<TextRunner, "drive" | "isActive" | "place"> {
  readonly driven: { record: TextRecord; placement: boolean }[] = [];
  active = false;
  outcome: (r: TextRecord) => Promise<TextRecord> = async (r) => {
    await this.repo.finish(
      withHoldCommand({
        record: r,
        state: "completed",
        result: { text: "hi", stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } },
        cost: 25,
      }),
    );
    return (await this.repo.find(r.id))!;
  };

  constructor(
    private readonly repo: FakeTextRepository,
    private readonly billing: FakeBilling,
  ) {}

  place(record: Parameters<TextRunner["place"]>[0]): ReturnType<TextRunner["place"]> {
    return this.billing.placeHold(holdRequestOf("text", record));
  }

  drive(record: TextRecord, opts: { placement?: Promise<unknown> } = {}): Promise<TextRecord> {
    this.driven.push({ record, placement: opts.placement !== undefined });
    return this.outcome(record);
  }

  isActive(): boolean {
    return this.active;
  }
}

function setup(over: Partial<TextRequestDeps> = {}) {
  const repo = new FakeTextRepository();
  const billing = new FakeBilling();
  const runner = new FakeRunner(repo, billing);
  const service = new TextRequestService({
    repo,
    runner,
    billing,
    catalog: { ready: true, get: (id) => (id === "m" ? model : undefined) },
    keys: { get: () => undefined },
    workerId: "00000000-0000-4000-8000-000000000001",
    syncTimeoutMs: 200,
    leaseMs: 60_000,
    logger,
    ...over,
  });
  const handle = (idempotencyKey: string | undefined, b: typeof body = body) =>
    service.handle({ identity, requestId: "req", endpoint: "messages", idempotencyKey, body: b, text: normalizeMessages(b), model: "m" });
  return { repo, billing, runner, service, handle };
}

describe("TextRequestService.handle", () => {
  it("without an allowance: claims under the record's id and places that hold alongside, handed to the runner", async () => {
    const { handle, billing, runner } = setup();
    const { record, replayed } = await handle("k1");
    expect(replayed).toBe(false);
    expect(record).toMatchObject({ state: "completed", holdId: record.id, allowanceId: null, estimatedCost: ESTIMATE, attempts: 1 });
    expect(billing.placed).toEqual([expect.objectContaining({ hold_id: record.id, amount_microrub: ESTIMATE, owner_ref: record.id })]);
    expect(runner.driven).toEqual([{ record: expect.objectContaining({ id: record.id }), placement: true }]);
  });

  it("with room on an allowance: placed there in the claim, under a fresh hold id, and billing is not called", async () => {
    const allowances = new FakeAllowances(1_000);
    const { handle, billing, runner } = setup({ allowances });
    const { record } = await handle("k1");
    expect(record.allowanceId).toBe(allowances.id);
    expect(record.holdId).not.toBe(record.id);
    expect(billing.placed).toEqual([]);
    expect(runner.driven[0]?.placement).toBe(false);
    expect(allowances.room).toBe(1_000 - ESTIMATE);
  });

  it("an allowance without room: the request places its own hold", async () => {
    const allowances = new FakeAllowances(ESTIMATE - 1);
    const { handle, billing } = setup({ allowances });
    const { record } = await handle("k1");
    expect(record.allowanceId).toBeNull();
    expect(billing.placed).toHaveLength(1);
  });

  it("the allowance closed before the claim: its estimate is given back, the allowance no longer open, and the request places its own hold", async () => {
    const allowances = new FakeAllowances(1_000);
    const { handle, billing, repo } = setup({ allowances });
    repo.allowanceClosed = true;
    const { record } = await handle("k1");
    expect(allowances.givenBack).toEqual([{ id: allowances.id, estimate: ESTIMATE, stillOpen: false }]);
    expect(record).toMatchObject({ allowanceId: null, holdId: record.id });
    expect(billing.placed).toHaveLength(1);
  });

  it("a duplicate of a final request replays its answer and drives nothing", async () => {
    const { handle, runner } = setup();
    const first = await handle("k1");
    const again = await handle("k1");
    expect(again).toEqual({ record: first.record, replayed: true });
    expect(runner.driven).toHaveLength(1);
  });

  it("a duplicate on the allowance path gives its estimate back; the allowance stays open", async () => {
    const allowances = new FakeAllowances(1_000);
    const { handle } = setup({ allowances });
    await handle("k1");
    await handle("k1");
    expect(allowances.givenBack).toEqual([{ id: allowances.id, estimate: ESTIMATE, stillOpen: true }]);
    expect(allowances.room).toBe(1_000 - ESTIMATE);
  });

  it("a duplicate whose request holds another hold id: the placement it made under the record's id is released", async () => {
    const allowances = new FakeAllowances(ESTIMATE);
    const { handle, billing } = setup({ allowances });
    const first = await handle("k1");
    expect(first.record.allowanceId).toBe(allowances.id);
    const again = await handle("k1");
    expect(again.replayed).toBe(true);
    expect(billing.placed.map((p) => p.hold_id)).toEqual([first.record.id]);
    await new Promise((r) => setImmediate(r));
    expect(billing.released).toEqual([{ holdId: first.record.id, reason: "a duplicate's placement; the request holds another hold" }]);
  });

  it("a duplicate of its own hold id releases nothing (its placement was the same hold)", async () => {
    const { handle, billing } = setup();
    await handle("k1");
    await handle("k1");
    await new Promise((r) => setImmediate(r));
    expect(billing.released).toEqual([]);
  });

  it("the same key with another body is refused, whatever state the first is in", async () => {
    const { handle } = setup();
    await handle("k1");
    await expect(handle("k1", { ...body, max_tokens: 50 })).rejects.toMatchObject({ code: "idempotency_key_mismatch" });
  });

  it("a duplicate of a request still running here waits for it; one running elsewhere is answered pending", async () => {
    const { handle, runner } = setup();
    runner.outcome = async (r) => r;
    const first = await handle("k1");
    expect(first.record.state).toBe("reserving");

    runner.active = true;
    runner.outcome = async (r) => ({ ...r, state: "completed" });
    expect((await handle("k1")).record.state).toBe("completed");
    runner.active = false;
    expect((await handle("k1")).record.state).toBe("reserving");
  });

  it("past the synchronous window: answered pending (202), the work goes on", async () => {
    const { handle, runner } = setup({ syncTimeoutMs: 20 });
    runner.outcome = (r) => new Promise((resolve) => setTimeout(() => resolve({ ...r, state: "completed" }), 500).unref());
    const { record } = await handle("k1");
    expect(record.state).toBe("reserving");
  });

  it("billing refused the hold: its error is answered as it is", async () => {
    const { handle, runner } = setup();
    runner.outcome = () => Promise.reject(new Refused(new AppError("daily_budget_exceeded", "over budget")));
    await expect(handle("k1")).rejects.toMatchObject({ code: "daily_budget_exceeded" });
  });

  it("interrupted mid-way (money may be held): pending, never an error", async () => {
    const { handle, runner } = setup();
    runner.outcome = () => Promise.reject(new Error("database gone"));
    expect((await handle("k1")).record.state).toBe("reserving");
  });

  it("refuses before reserving anything: no Idempotency-Key, an unknown model", async () => {
    const { handle, service, billing, repo } = setup();
    await expect(handle(undefined)).rejects.toBeInstanceOf(AppError);
    await expect(
      service.handle({ identity, requestId: "r", endpoint: "messages", idempotencyKey: "k", body, text: normalizeMessages(body), model: "nope" }),
    ).rejects.toMatchObject({ code: "model_not_found" });
    expect(billing.placed).toEqual([]);
    expect(repo.records.size).toBe(0);
  });
});
