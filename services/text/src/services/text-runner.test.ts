import { BillingUnreachable } from "@meter/service-clients";
import { AppError, createLogger } from "@meter/service-kit";
import type { NewTextRecord, TextRecord } from "../domain/text-record";
import { UpstreamError } from "@meter/upstreams";
import { Refused } from "@meter/hold-client";
import { TextRunner, type RunnerDeps } from "./text-runner";
import { FakeAllowances, FakeBilling, FakeProvider, FakeTextRepository, newTextRecord } from "../../test/support/text-ports.fake";

/**
 * Every branch of one attempt (text-runner.ts), with fakes at its ports: what ends final, what is
 * parked for a later attempt, what is forgotten, and which holds are placed and released on the way.
 */
const logger = createLogger("text-runner-test", "silent");

function setup(over: Partial<RunnerDeps> = {}) {
  const repo = new FakeTextRepository();
  const billing = new FakeBilling();
  const provider = new FakeProvider();
  const kicks = { outbox: 0 };
  const runner = new TextRunner({
    repo,
    billing,
    providerFor: () => provider,
    logger,
    upstreamTimeoutMs: 1_000,
    onOutbox: () => kicks.outbox++,
    maxAttempts: 3,
    upstreamRetryDelaysMs: [0],
    parkBaseMs: 1_000,
    ...over,
  });
  const claim = async (o: Partial<NewTextRecord> = {}): Promise<TextRecord> => {
    const c = await repo.claim(newTextRecord({ ownerId: "00000000-0000-4000-8000-000000000001", ...o }));
    if (!("created" in c)) throw new Error("not claimed");
    return c.record;
  };
  return { repo, billing, provider, runner, kicks, claim };
}

const refusal = () => new AppError("insufficient_balance", "not enough money");
const parkedFor = (r: TextRecord) => r.nextAttemptAt.getTime() - Date.now();

describe("TextRunner: the hold", () => {
  it("places the hold under the record's id, calls the upstream once and completes with the charge and its settle", async () => {
    const { runner, billing, provider, repo, kicks, claim } = setup();
    const r = await claim();
    const done = await runner.drive(r);
    expect(billing.placed).toEqual([expect.objectContaining({ hold_id: r.id, amount_microrub: 314, owner_ref: r.id, source: "text" })]);
    expect(provider.calls).toHaveLength(1);
    // 10 input tokens at 1 microrub, 5 output at 3: 25.
    expect(done).toMatchObject({ state: "completed", cost: 25, result: { text: "hello", usage: { input_tokens: 10, output_tokens: 5 } } });
    expect(repo.finals).toEqual([expect.objectContaining({ state: "completed", cost: 25 })]);
    expect(kicks.outbox).toBe(1);
  });

  it("uses the placement the request path started instead of placing again", async () => {
    const { runner, billing, claim } = setup();
    const r = await claim();
    const placement = billing.placeHold({
      hold_id: r.id,
      key_id: r.keyId,
      amount_microrub: 314,
      operation: "text",
      model: "m",
      source: "text",
      owner_ref: r.id,
    });
    expect(await runner.drive(r, { placement })).toMatchObject({ state: "completed" });
    expect(billing.placed).toHaveLength(1);
  });

  it("a request on an allowance places nothing in billing: its hold was committed with the claim", async () => {
    const { runner, billing, claim } = setup();
    const r = await claim({ allowanceId: "00000000-0000-4000-8000-0000000000aa", holdId: "00000000-0000-4000-8000-0000000000bb" });
    expect(await runner.drive(r)).toMatchObject({ state: "completed" });
    expect(billing.placed).toEqual([]);
  });

  it("refused: nothing reserved, the record is forgotten and Refused carries billing's error; no release on a first attempt", async () => {
    const { runner, billing, provider, repo, claim } = setup();
    const r = await claim();
    billing.placements.push(refusal());
    const refused = await runner.drive(r).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Refused);
    expect((refused as Refused).error.code).toBe("insufficient_balance");
    expect(repo.forgotten).toContain(r.id);
    expect(provider.calls).toEqual([]);
    expect(billing.released).toEqual([]);
  });

  it("refused on a later attempt: failed with billing's error, its hold id released in the final commit, never forgotten", async () => {
    const { runner, billing, repo, kicks, claim } = setup();
    const r = await claim({ attempts: 2 });
    billing.placements.push(refusal());
    const done = await runner.drive(r);
    expect(done).toMatchObject({ state: "failed", error: { code: "insufficient_balance", message: "not enough money; nothing was charged" } });
    expect(repo.forgotten).toEqual([]);
    // The release travels with the final state (a tombstone for the id), not as a call of its own.
    expect(billing.released).toEqual([]);
    expect(repo.finals).toEqual([expect.objectContaining({ state: "failed", releaseReason: "hold refused (insufficient_balance); nothing charged" })]);
    expect(repo.finals[0]!.command.params[1]).toBe("billing.hold.release");
    expect(kicks.outbox).toBe(1);
  });

  it("refused with room on an allowance of this process: moved onto it under a fresh hold id and run there", async () => {
    const allowances = new FakeAllowances(1_000);
    const { runner, billing, provider, repo, claim } = setup({ allowances });
    const r = await claim();
    billing.placements.push(refusal());
    const done = await runner.drive(r);
    expect(done).toMatchObject({ state: "completed", allowanceId: allowances.id });
    expect(done.holdId).not.toBe(r.id);
    expect(billing.placed).toHaveLength(1);
    expect(provider.calls).toHaveLength(1);
    expect(repo.finals[0]?.record).toMatchObject({ allowanceId: allowances.id, holdId: done.holdId });
    expect(allowances.room).toBe(1_000 - 314);
  });

  it("refused, and the allowance closed meanwhile: its estimate is given back and the refusal stands", async () => {
    const allowances = new FakeAllowances(1_000);
    const { runner, billing, repo, claim } = setup({ allowances });
    const r = await claim();
    billing.placements.push(refusal());
    repo.allowanceClosed = true;
    await expect(runner.drive(r)).rejects.toBeInstanceOf(Refused);
    expect(allowances.givenBack).toEqual([{ id: allowances.id, estimate: 314, stillOpen: true }]);
    expect(allowances.room).toBe(1_000);
    expect(repo.forgotten).toEqual([r.id]);
  });

  it("refused, and whether the move committed is not known: parked, never forgotten", async () => {
    const allowances = new FakeAllowances(1_000);
    const { runner, billing, repo, claim } = setup({ allowances });
    const r = await claim();
    billing.placements.push(refusal());
    repo.failMove = true;
    expect(await runner.drive(r)).toMatchObject({ state: "reserving", allowanceId: null });
    expect(repo.forgotten).toEqual([]);
  });

  it("refused on a later attempt: never moved onto an allowance (an earlier placement could still land)", async () => {
    const allowances = new FakeAllowances(1_000);
    const { runner, billing, claim } = setup({ allowances });
    const r = await claim({ attempts: 2 });
    billing.placements.push(refusal());
    expect(await runner.drive(r)).toMatchObject({ state: "failed", allowanceId: null });
    expect(allowances.room).toBe(1_000);
  });

  it.each([
    ["taken with another amount", new AppError("conflict", "taken")],
    ["already released", "released" as const],
  ])("its hold id used up (%s): the own id is released and the request reserves anew under a fresh id", async (_why, answer) => {
    const { runner, billing, claim } = setup();
    const r = await claim();
    billing.placements.push(answer);
    const done = await runner.drive(r);
    expect(done.state).toBe("completed");
    expect(done.holdId).not.toBe(r.id);
    expect(billing.placed.map((p) => p.hold_id)).toEqual([r.id, done.holdId]);
    expect(billing.released).toEqual([{ holdId: r.id, reason: "replaced by a new hold id" }]);
  });

  it("billing never reached on a first attempt: refused with 503, nothing held, the record forgotten", async () => {
    const { runner, billing, repo, claim } = setup();
    const r = await claim();
    billing.placements.push(new BillingUnreachable("not_delivered"));
    const refused = await runner.drive(r).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Refused);
    expect((refused as Refused).error.code).toBe("service_unavailable");
    expect(repo.forgotten).toEqual([r.id]);
  });

  it("billing's answer lost (it may have held): parked with the billing back-off, the hold kept", async () => {
    const { runner, billing, provider, repo, claim } = setup();
    const r = await claim({ attempts: 3 });
    billing.placements.push(new BillingUnreachable("unknown"));
    const parked = await runner.drive(r);
    expect(parked.state).toBe("reserving");
    // 1 s doubled per attempt, capped at billing's 5 s.
    expect(parkedFor(parked)).toBeGreaterThan(3_000);
    expect(parkedFor(parked)).toBeLessThanOrEqual(4_000);
    expect(provider.calls).toEqual([]);
    expect(repo.forgotten).toEqual([]);
    expect(billing.released).toEqual([]);
  });
});

describe("TextRunner: the upstream", () => {
  it("a 5xx is retried inline once (nothing ran), then answered", async () => {
    const { runner, provider, claim } = setup();
    provider.answers.push(new UpstreamError("failed", "overloaded", 529));
    expect(await runner.drive(await claim())).toMatchObject({ state: "completed" });
    expect(provider.calls).toHaveLength(2);
  });

  it("still failing after the retries: failed with the status, its hold released, nothing charged", async () => {
    const { runner, provider, repo, kicks, claim } = setup();
    provider.answers.push(new UpstreamError("failed", "x", 503), new UpstreamError("failed", "x", 503));
    const done = await runner.drive(await claim());
    expect(done).toMatchObject({ state: "failed", error: { code: "upstream_error", message: "the upstream answered 503; nothing was charged" } });
    expect(repo.finals).toEqual([expect.objectContaining({ state: "failed", releaseReason: "upstream failed; nothing charged" })]);
    expect(kicks.outbox).toBe(1);
  });

  it("the upstream refused our credentials: failed, and the client is not shown the upstream's words", async () => {
    const { runner, provider, claim } = setup();
    provider.answers.push(new UpstreamError("rejected", "invalid x-api-key sk-123", 401));
    expect(await runner.drive(await claim())).toMatchObject({
      state: "failed",
      error: { message: "the upstream refused this service's credentials; nothing was charged" },
    });
  });

  it("never reached: failed at once, no inline retry", async () => {
    const { runner, provider, claim } = setup();
    provider.answers.push(new UpstreamError("not_sent", "ECONNREFUSED"));
    expect(await runner.drive(await claim())).toMatchObject({ state: "failed", error: { message: "the upstream could not be reached; nothing was charged" } });
    expect(provider.calls).toHaveLength(1);
  });

  it.each([
    ["a timeout", new UpstreamError("unknown", "timed out")],
    ["an error of no known kind", new TypeError("boom")],
  ])("%s is an unknown outcome: pending, the hold kept, parked for a later (counted) attempt", async (_what, error) => {
    const { runner, provider, repo, billing, claim } = setup();
    provider.answers.push(error);
    const parked = await runner.drive(await claim());
    expect(parked.state).toBe("reserving");
    expect(parkedFor(parked)).toBeGreaterThan(500);
    expect(repo.finals).toEqual([]);
    expect(billing.released).toEqual([]);
  });

  it("usage not reported: charged on the input estimate and the answer's bytes, capped at max tokens", async () => {
    const { runner, provider, claim } = setup();
    provider.answers.push({ text: "x".repeat(500), stopReason: "max_tokens" });
    // 14 input tokens + 100 output tokens (500 bytes capped at 100) * 3 = 314, the whole hold.
    expect(await runner.drive(await claim())).toMatchObject({ state: "completed", cost: 314, result: { usage: { input_tokens: 14, output_tokens: 100 } } });
  });
});

describe("TextRunner: attempts", () => {
  it("past the last attempt: failed and released without calling the upstream again", async () => {
    const { runner, provider, billing, claim } = setup();
    const done = await runner.drive(await claim({ attempts: 4 }));
    expect(done).toMatchObject({ state: "failed", error: { message: "the upstream did not answer usably in 3 attempts; nothing was charged" } });
    expect(provider.calls).toEqual([]);
    expect(billing.placed).toEqual([]);
  });

  it("an answer that could not be stored is kept: the next attempt stores it without paying the upstream again", async () => {
    const { runner, provider, repo, claim } = setup();
    repo.failFinishes = 1;
    const parked = await runner.drive(await claim());
    expect(parked.state).toBe("reserving");
    const next = await repo.update(parked, { attempts: 2 });
    expect(await runner.drive(next!)).toMatchObject({ state: "completed", cost: 25 });
    expect(provider.calls).toHaveLength(1);
  });

  it("out of attempts with an answer never stored: one more try, then failed and nothing charged", async () => {
    const { runner, repo, claim } = setup();
    repo.failFinishes = 1;
    let r = await runner.drive(await claim());
    r = (await repo.update(r, { attempts: 4 }))!;
    repo.failFinishes = 1;
    expect(await runner.drive(r)).toMatchObject({
      state: "failed",
      error: { code: "upstream_error", message: "the answer could not be stored; nothing was charged" },
    });
  });

  it("finished by someone else meanwhile: the record as it now is", async () => {
    const { runner, repo, claim } = setup();
    const r = await claim();
    const takenOver = (await repo.update(r, { ownerId: "00000000-0000-4000-8000-000000000002", attempts: 2 }))!;
    expect(await runner.drive(r)).toEqual(takenOver);
    expect(repo.finals).toEqual([]);
  });

  it("a second driver of the same record shares the first one's attempt", async () => {
    const { runner, provider, claim } = setup();
    let answer: (v: { text: string; stopReason: "end_turn" }) => void = () => undefined;
    provider.answers.push(new Promise((resolve) => (answer = resolve)));
    const r = await claim();
    const first = runner.drive(r);
    const second = runner.drive(r);
    expect(second).toBe(first);
    expect(runner.isActive(r.id)).toBe(true);
    answer({ text: "ok", stopReason: "end_turn" });
    await first;
    expect(provider.calls).toHaveLength(1);
    expect(runner.isActive(r.id)).toBe(false);
  });
});
