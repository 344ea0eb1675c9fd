import { randomUUID } from "node:crypto";
import { BillingEndpoints, type AllowanceSpend, type HoldOp, type HoldOpsResponse, type HoldSource } from "@meter/contracts";
import { createLogger, Metrics } from "@meter/service-kit";
import { BooksCheckService } from "../src/accounts/books-check.service";
import { BooksRepository } from "../src/accounts/books.repository";
import { LedgerLinesRepository } from "../src/accounts/ledger-lines.repository";
import { SpendRepository } from "../src/accounts/spend.repository";
import { HoldExpiryService } from "../src/holds/hold-expiry.service";
import type { HoldOutcome } from "../src/holds/hold-ops.repository";
import { holdCalls, placeOp, SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

/** One op through `POST /internal/v1/hold-ops`, signed as text, answered as the op's result. */
async function op(o: HoldOp): Promise<HoldOpsResponse["results"][number]> {
  const res = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [o] }).expect(200);
  return (res.body as HoldOpsResponse).results[0]!;
}

function grantOp(keyId: string, amount: number, min: number, holdId = randomUUID()): HoldOp {
  return {
    op: "grant",
    hold_id: holdId,
    key_id: keyId,
    amount_microrub: amount,
    min_microrub: min,
    operation: "text",
    source: "text",
    owner_ref: `allowance-${holdId}`,
  };
}

function spendOf(allowanceId: string, keyId: string, estimate: number, requestId: string): AllowanceSpend {
  return { allowance_id: allowanceId, key_id: keyId, reserved_microrub: estimate, operation: "text", model: "m", owner_ref: `req-${requestId}` };
}

/** The commands a holder's outbox sends, as the consumer hands them to billing (signed by `source`). */
const commands = {
  async settle(allowanceId: string, keyId: string, estimate: number, cost: number, requestId = randomUUID(), source: HoldSource = "text") {
    const [r] = await h.services.holds.apply([
      { op: "settle", hold_id: requestId, amount_microrub: cost, source, allowance: spendOf(allowanceId, keyId, estimate, requestId) },
    ]);
    return { requestId, outcome: outcomeOf(r) };
  },
  async release(allowanceId: string, keyId: string, estimate: number, requestId = randomUUID(), source: HoldSource = "text") {
    const [r] = await h.services.holds.apply([
      { op: "release", hold_id: requestId, reason: "upstream failed", source, allowance: spendOf(allowanceId, keyId, estimate, requestId) },
    ]);
    return { requestId, outcome: outcomeOf(r) };
  },
  async close(allowanceId: string, used: number, source: HoldSource = "text", organizationId?: string) {
    const org = organizationId === undefined ? {} : { organization_id: organizationId };
    const [r] = await h.services.holds.apply([{ op: "release", hold_id: allowanceId, ...org, reason: "idle", used_microrub: used, source }]);
    return outcomeOf(r);
  },
};

function outcomeOf(r: unknown): HoldOutcome {
  if (r instanceof Error) throw r;
  return (r as { outcome: HoldOutcome }).outcome;
}

const balance = async (orgId: string) => (await h.call("GET", `/admin/v1/organizations/${orgId}/balance`).expect(200)).body;
const usage = async (keyId: string) => (await h.call("GET", `/admin/v1/keys/${keyId}/usage`).expect(200)).body;
const hold = (id: string) => h.services.holdReads.find(id);
const entriesOf = async (orgId: string, holdId: string) =>
  ((await h.call("GET", `/admin/v1/organizations/${orgId}/ledger?limit=200`).expect(200)).body.data as Record<string, unknown>[])
    .filter((e) => e.hold_id === holdId)
    .reverse();

describe("granting an allowance", () => {
  it("grants at most its share of what is left, reserved like a hold, usable until the budget day ends", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const id = randomUUID();
    const r = await op(grantOp(a.keyId, 400_000, 10_000, id));
    // A quarter (ALLOWANCE_MAX_SHARE) of the 1,000,000 available, not the 400,000 asked.
    expect(r).toMatchObject({ ok: true, hold: { hold_id: id, kind: "allowance", status: "active", amount_microrub: 250_000, consumed_microrub: 0 } });
    const granted = (r as { hold: { usable_until: string; created_at: string } }).hold;
    const midnight = new Date(granted.created_at);
    midnight.setUTCHours(24, 0, 0, 0);
    expect(granted.usable_until).toBe(midnight.toISOString());
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 250_000 });
    expect(await usage(a.keyId)).toMatchObject({ spent_microrub: 0, reserved_microrub: 250_000 });
    expect(await entriesOf(a.organizationId, id)).toEqual([expect.objectContaining({ kind: "hold", amount_microrub: 250_000, reference: "allowance" })]);

    // Granting is idempotent on the id: the same allowance, nothing reserved twice.
    expect(await op(grantOp(a.keyId, 400_000, 10_000, id))).toMatchObject({ ok: true, hold: { hold_id: id, amount_microrub: 250_000 } });
    expect((await balance(a.organizationId)).reserved_microrub).toBe(250_000);
    // The id of a per-request hold, or of another key's allowance, is not an allowance to return.
    const otherKey = await h
      .call(
        "POST",
        "/admin/v1/keys",
        { kind: "admin" },
        { user_id: a.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 1_000_000_000 },
      )
      .expect(201);
    expect(await op(grantOp(otherKey.body.id, 400_000, 10_000, id))).toMatchObject({ ok: false, error: { status: 409, code: "conflict" } });
    // Another organization's hold ids are its own (docs/api.md): the same id is an allowance of its own there.
    const other = await seedAccount(h, { credit: 1_000_000 });
    expect(await op(grantOp(other.keyId, 400_000, 10_000, id))).toMatchObject({ ok: true, hold: { hold_id: id, organization_id: other.organizationId } });
    expect((await balance(a.organizationId)).reserved_microrub).toBe(250_000);
    const requestId = randomUUID();
    await holdCalls(h).place(a.keyId, 1_000, requestId);
    expect(await op(grantOp(a.keyId, 1_000, 1_000, requestId))).toMatchObject({ ok: false, error: { code: "conflict" } });
  });

  it("grants whole requests of the asking request's estimate, so no remainder too small for one stays parked", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    // A quarter of 1,000,000 is 250,000: 35 requests of 7,000 (245,000), not 35.7 of them.
    const r = await op({ ...grantOp(a.keyId, 400_000, 28_000), unit_microrub: 7_000 } as HoldOp);
    expect(r).toMatchObject({ ok: true, hold: { amount_microrub: 245_000 } });
    // Fewer whole requests than the holder's minimum: refused, nothing placed.
    const poor = await seedAccount(h, { credit: 110_000 });
    const refused = randomUUID();
    expect(await op({ ...grantOp(poor.keyId, 100_000, 28_000, refused), unit_microrub: 7_000 } as HoldOp)).toMatchObject({
      ok: false,
      error: { code: "insufficient_balance" },
    });
    expect(await hold(refused)).toBeUndefined();
  });

  it("refuses near a limit, placing nothing: the short limit says which", async () => {
    const poor = await seedAccount(h, { credit: 30_000 });
    const refused = randomUUID();
    // A quarter of 30,000 is 7,500: less than the 10,000 the holder needs.
    expect(await op(grantOp(poor.keyId, 100_000, 10_000, refused))).toMatchObject({ ok: false, error: { status: 402, code: "insufficient_balance" } });
    expect(await hold(refused)).toBeUndefined();
    expect(await balance(poor.organizationId)).toMatchObject({ reserved_microrub: 0 });
    // The same key still places a request's own hold up to the last microruble.
    expect((await holdCalls(h).place(poor.keyId, 30_000)).status).toBe(200);

    const budgeted = await seedAccount(h, { credit: 10_000_000, dailyBudget: 20_000 });
    const refusedByBudget = randomUUID();
    expect(await op(grantOp(budgeted.keyId, 100_000, 10_000, refusedByBudget))).toMatchObject({
      ok: false,
      error: { status: 429, code: "daily_budget_exceeded" },
    });
    expect(await hold(refusedByBudget)).toBeUndefined();
    expect(await usage(budgeted.keyId)).toMatchObject({ reserved_microrub: 0 });
    const revoked = await seedAccount(h, { credit: 1_000_000 });
    await h.call("POST", `/admin/v1/keys/${revoked.keyId}/revoke`).expect(200);
    expect(await op(grantOp(revoked.keyId, 100_000, 10_000))).toMatchObject({ ok: false, error: { code: "invalid_api_key" } });
  });

  it("grants nothing once its holder released the id it never heard back about", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const id = randomUUID();
    expect(await commands.close(id, 0, "text", a.organizationId)).toBe("released_unplaced");
    expect(await op(grantOp(a.keyId, 100_000, 10_000, id))).toMatchObject({ ok: true, hold: { hold_id: id, status: "released", amount_microrub: 0 } });
    expect(await balance(a.organizationId)).toMatchObject({ reserved_microrub: 0 });
  });
});

describe("requests on an allowance", () => {
  it("records each request's hold from its settle or release: the estimate leaves the allowance, the cost is charged today", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, allowance));

    const settled = await commands.settle(allowance, a.keyId, 5_000, 3_000);
    expect(settled.outcome).toBe("settled");
    const released = await commands.release(allowance, a.keyId, 4_000);
    expect(released.outcome).toBe("released");

    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 997_000, reserved_microrub: 91_000 });
    const today = await usage(a.keyId);
    expect(today).toMatchObject({ spent_microrub: 3_000, reserved_microrub: 91_000 });
    expect(await hold(allowance)).toMatchObject({ status: "active", consumed_microrub: 9_000 });
    expect(await hold(settled.requestId)).toMatchObject({
      kind: "request",
      allowance_id: allowance,
      status: "settled",
      amount_microrub: 5_000,
      settled_microrub: 3_000,
      budget_day: today.day,
      source: "text",
      owner_ref: `req-${settled.requestId}`,
    });
    // Each request has its hold and its settle (or release), as a per-request hold has; the hold moved
    // the reservation out of the allowance, so the reserved figure after it is what it was.
    expect(await entriesOf(a.organizationId, settled.requestId)).toEqual([
      expect.objectContaining({ kind: "hold", amount_microrub: 5_000, balance_after_microrub: 1_000_000, reserved_after_microrub: 100_000 }),
      expect.objectContaining({ kind: "settle", amount_microrub: 3_000, balance_after_microrub: 997_000, reserved_after_microrub: 95_000 }),
    ]);
    expect(await entriesOf(a.organizationId, released.requestId)).toEqual([
      expect.objectContaining({ kind: "hold", amount_microrub: 4_000, reserved_after_microrub: 95_000 }),
      expect.objectContaining({ kind: "release", amount_microrub: 4_000, reserved_after_microrub: 91_000, reference: "upstream failed" }),
    ]);

    // Redelivered commands change nothing.
    expect((await commands.settle(allowance, a.keyId, 5_000, 3_000, settled.requestId)).outcome).toBe("already");
    expect((await commands.release(allowance, a.keyId, 4_000, released.requestId)).outcome).toBe("already");
    expect((await commands.settle(allowance, a.keyId, 5_000, 2_000, settled.requestId)).outcome).toBe("conflict");
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 997_000, reserved_microrub: 91_000 });

    // The cabinet's lines: one per request, and the allowance only for what it still reserves.
    const linesNow = async () =>
      (await new LedgerLinesRepository(h.db).page({ organizationId: a.organizationId, limit: 50 }))
        .filter((l) => l.hold_id !== null)
        .map((l) => [l.hold_id, l.kind, l.status, l.amount_microrub, l.reserved_microrub, l.reference]);
    expect(await linesNow()).toEqual([
      [released.requestId, "request", "released", 0, 4_000, "upstream failed"],
      [settled.requestId, "request", "charged", -3_000, 5_000, null],
      [allowance, "allowance", "reserved", -91_000, 91_000, "allowance"],
    ]);
    // The overview shows it apart from requests in progress: set aside for the key's next requests.
    const spend = new SpendRepository(h.db, "UTC");
    expect(await spend.setAside(a.organizationId)).toBe(91_000);
    await commands.close(allowance, 9_000);
    expect(await spend.setAside(a.organizationId)).toBe(0);
    expect((await linesNow()).map((l) => l[0])).toEqual([released.requestId, settled.requestId]);
  });

  it("releases the rest once closed, whether the close arrives before or after its requests' commands, exactly once", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    // Closed first: the close waits for the requests the holder says it placed.
    const early = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, early));
    expect(await commands.close(early, 9_000)).toBe("closing");
    expect(await commands.close(early, 9_000)).toBe("already");
    expect(await hold(early)).toMatchObject({ status: "active" });
    await commands.settle(early, a.keyId, 5_000, 5_000);
    expect(await hold(early)).toMatchObject({ status: "active", consumed_microrub: 5_000 });
    await commands.release(early, a.keyId, 4_000);
    expect(await hold(early)).toMatchObject({ status: "released", consumed_microrub: 9_000 });
    expect((await entriesOf(a.organizationId, early)).map((e) => [e.kind, e.amount_microrub, e.reference])).toEqual([
      ["hold", 100_000, "allowance"],
      ["release", 91_000, "idle"],
    ]);
    expect(await commands.close(early, 9_000)).toBe("already");
    expect(await commands.close(early, 8_000)).toBe("conflict");

    // Closed after: released at once.
    const late = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, late));
    await commands.settle(late, a.keyId, 2_000, 1_500);
    expect(await commands.close(late, 2_000)).toBe("released");
    expect((await entriesOf(a.organizationId, late)).map((e) => [e.kind, e.amount_microrub])).toEqual([
      ["hold", 100_000],
      ["release", 98_000],
    ]);
    // Closed unused: all of it back.
    const unused = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, unused));
    expect(await commands.close(unused, 0)).toBe("released");

    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 993_500, reserved_microrub: 0 });
    expect(await usage(a.keyId)).toMatchObject({ spent_microrub: 6_500, reserved_microrub: 0 });
    await h.assertBooksBalance();
  });

  it("refuses what does not fit: over its amount, over what it was closed with, on one no longer active, another close", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 10_000, 1_000, allowance));
    await commands.settle(allowance, a.keyId, 6_000, 6_000);
    // 6,000 + 5,000 would pass its 10,000.
    expect((await commands.settle(allowance, a.keyId, 5_000, 1_000)).outcome).toBe("conflict");
    // A cost above the request's estimate.
    expect((await commands.settle(allowance, a.keyId, 1_000, 1_001)).outcome).toBe("exceeds_hold");
    // The allowance itself is never settled; a release with a used amount is only for an allowance.
    expect(outcomeOf((await h.services.holds.apply([{ op: "settle", hold_id: allowance, amount_microrub: 1, source: "text" }]))[0])).toBe("conflict");
    const request = await commands.settle(allowance, a.keyId, 1_000, 500);
    expect(await commands.close(request.requestId, 1_000)).toBe("conflict");
    // Only the service that holds it: media-jobs' commands move nothing on a text allowance.
    expect((await commands.settle(allowance, a.keyId, 1_000, 1_000, randomUUID(), "media-jobs")).outcome).toBe("foreign");
    expect(await commands.close(allowance, 7_000, "media-jobs")).toBe("foreign");
    // Another organization's key's request named on it: that organization has no such allowance.
    const other = await seedAccount(h, { credit: 1_000_000 });
    expect((await commands.settle(allowance, other.keyId, 1_000, 1_000)).outcome).toBe("not_found");
    // An allowance billing never granted.
    expect((await commands.settle(randomUUID(), a.keyId, 1_000, 1_000)).outcome).toBe("not_found");

    // Closed with more than it holds, or with less than it already recorded.
    expect(await commands.close(allowance, 10_001)).toBe("conflict");
    expect(await commands.close(allowance, 6_999)).toBe("conflict");
    expect(await commands.close(allowance, 8_000)).toBe("closing");
    // Closed with 8,000: a request beyond that is not its holder's.
    expect((await commands.settle(allowance, a.keyId, 1_500, 1_000)).outcome).toBe("conflict");
    expect(await commands.close(allowance, 9_000)).toBe("conflict");
    // Over HTTP, a close that does not fit is a 409 that says so.
    expect(await op({ op: "release", hold_id: allowance, reason: "idle", used_microrub: 9_000 })).toMatchObject({
      ok: false,
      error: { status: 409, code: "conflict", message: expect.stringContaining(`allowance ${allowance}`) },
    });
    // The hold audit's word ("no such allowance") cannot end a close that waits for its requests.
    expect(outcomeOf((await h.services.holds.apply([{ op: "release", hold_id: allowance, reason: "absent" }]))[0])).toBe("conflict");
    await commands.release(allowance, a.keyId, 1_000);
    expect(await hold(allowance)).toMatchObject({ status: "released", consumed_microrub: 8_000 });
    // Released: nothing more is recorded on it.
    expect((await commands.settle(allowance, a.keyId, 1_000, 1_000)).outcome).toBe("conflict");
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 993_500, reserved_microrub: 0 });
  });
});

describe("money parked in allowances", () => {
  it("a refusal it caused says when to try again; a refusal it did not cause does not", async () => {
    const a = await seedAccount(h, { credit: 100_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 25_000, 1_000, allowance));
    // 75,000 available; 100,000 once the allowance is back.
    expect(await op(placeOp(a.keyId, 80_000))).toMatchObject({ ok: false, error: { code: "insufficient_balance", retry_after_seconds: 5 } });
    const plain = await op(placeOp(a.keyId, 120_000));
    expect(plain).toMatchObject({ ok: false, error: { code: "insufficient_balance" } });
    expect((plain as { error: Record<string, unknown> }).error).not.toHaveProperty("retry_after_seconds");
    // Returned: the same request fits.
    expect(await commands.close(allowance, 0)).toBe("released");
    expect(await op(placeOp(a.keyId, 80_000))).toMatchObject({ ok: true });

    const b = await seedAccount(h, { credit: 10_000_000, dailyBudget: 40_000 });
    await op(grantOp(b.keyId, 100_000, 1_000));
    // A quarter of the budget went to the allowance: 30,000 left today, 40,000 with it back.
    expect(await op(placeOp(b.keyId, 35_000))).toMatchObject({ ok: false, error: { code: "daily_budget_exceeded", retry_after_seconds: 5 } });
    const over = await op(placeOp(b.keyId, 45_000));
    expect((over as { error: Record<string, unknown> }).error).toMatchObject({ code: "daily_budget_exceeded" });
    expect((over as { error: Record<string, unknown> }).error).not.toHaveProperty("retry_after_seconds");
    // Without any allowance, a refusal is a plain one.
    const c = await seedAccount(h, { credit: 1_000 });
    expect(((await op(placeOp(c.keyId, 2_000))) as { error: Record<string, unknown> }).error).not.toHaveProperty("retry_after_seconds");
  });

  it("concurrent grants and per-request placements never reserve past the balance or the day's budget", async () => {
    const balanceLimited = await seedAccount(h, { credit: 100_000 });
    const budgetLimited = await seedAccount(h, { credit: 10_000_000, dailyBudget: 100_000 });
    for (const acc of [balanceLimited, budgetLimited]) {
      const ops: HoldOp[] = [];
      for (let i = 0; i < 48; i++) ops.push(i % 6 === 0 ? grantOp(acc.keyId, 20_000, 4_000) : placeOp(acc.keyId, 4_000));
      const results = await Promise.all(ops.map((o) => op(o)));
      const reserved = results.reduce((sum, r) => sum + (r.ok ? r.hold.amount_microrub : 0), 0);
      expect(reserved).toBeLessThanOrEqual(100_000);
      // Per-request holds keep going until what is left is less than one of them: nothing is wasted.
      expect(reserved).toBeGreaterThan(100_000 - 4_000);
      expect(results.filter((r) => !r.ok).every((r) => !r.ok && ["insufficient_balance", "daily_budget_exceeded"].includes(r.error.code))).toBe(true);
      expect((await balance(acc.organizationId)).reserved_microrub).toBe(reserved);
      expect((await usage(acc.keyId)).reserved_microrub).toBe(reserved);
    }
    await h.assertBooksBalance();
  });
});

describe("an allowance spent while others place", () => {
  it("its requests' commands, its close and per-request placements interleave without passing the budget", async () => {
    const a = await seedAccount(h, { credit: 10_000_000, dailyBudget: 150_000 });
    const allowance = randomUUID();
    // A quarter of the 150,000 budget.
    expect(await op(grantOp(a.keyId, 100_000, 1_000, allowance))).toMatchObject({ ok: true, hold: { amount_microrub: 37_500 } });
    const requests = Array.from({ length: 20 }, () => randomUUID());
    const work: Promise<unknown>[] = [
      ...requests.map((id) => commands.settle(allowance, a.keyId, 1_500, 1_000, id)),
      commands.close(allowance, 30_000),
      ...Array.from({ length: 40 }, () => op(placeOp(a.keyId, 4_000))),
    ];
    const results = await Promise.all(work);
    const settled = results.slice(0, 20) as { outcome: HoldOutcome }[];
    expect(settled.every((r) => r.outcome === "settled")).toBe(true);
    const placed = (results.slice(21) as Awaited<ReturnType<typeof op>>[]).filter((r) => r.ok).length;
    expect(await hold(allowance)).toMatchObject({ status: "released", consumed_microrub: 30_000 });
    const today = await usage(a.keyId);
    expect(today).toMatchObject({ spent_microrub: 20_000, reserved_microrub: placed * 4_000 });
    expect(today.spent_microrub + today.reserved_microrub).toBeLessThanOrEqual(150_000);
    await h.assertBooksBalance();
  });
});

describe("an allowance nobody closes", () => {
  it("expires, freeing what its requests did not take", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, allowance));
    await commands.settle(allowance, a.keyId, 5_000, 4_000);
    await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '73 hours' WHERE id = ${allowance}::uuid`;
    const metrics = new Metrics("billing-ledger");
    const sweeper = new HoldExpiryService(
      h.services.holdReads,
      h.services.holds,
      72,
      createLogger("expiry-test", "silent"),
      metrics.counter("billing_holds_expired_total", "expired", ["source"]),
    );
    expect(await sweeper.sweep()).toBe(1);
    expect(await hold(allowance)).toMatchObject({ status: "expired", consumed_microrub: 5_000 });
    expect((await entriesOf(a.organizationId, allowance)).map((e) => [e.kind, e.amount_microrub])).toEqual([
      ["hold", 100_000],
      ["expire", 95_000],
    ]);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 996_000, reserved_microrub: 0 });
    expect(await usage(a.keyId)).toMatchObject({ reserved_microrub: 0 });
    // A request's command after that finds it closed; its holder's close changes nothing.
    expect((await commands.settle(allowance, a.keyId, 1_000, 1_000)).outcome).toBe("conflict");
    expect(await commands.close(allowance, 5_000)).toBe("already");
    await h.assertBooksBalance();
  });
});

describe("requests on an allowance over hold-ops (the holder's broker down)", () => {
  it("its holder settles, releases and closes them over HTTP, once whichever way they come; another service moves nothing", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, allowance));
    const settled = randomUUID();
    const released = randomUUID();
    const settle = { op: "settle", hold_id: settled, amount_microrub: 3_000, allowance: spendOf(allowance, a.keyId, 5_000, settled) } as const;
    const release = { op: "release", hold_id: released, reason: "upstream failed", allowance: spendOf(allowance, a.keyId, 4_000, released) } as const;

    // Signed as media-jobs, a command naming text's allowance is refused and records nothing.
    const mediaJobs = { kind: "service", service: "media-jobs" } as const;
    const foreign = await h.call("POST", BillingEndpoints.holdOps.path, mediaJobs, { ops: [settle] }).expect(200);
    expect((foreign.body as HoldOpsResponse).results[0]).toMatchObject({ ok: false });
    expect(await hold(settled)).toBeUndefined();

    expect(await op(settle)).toMatchObject({ ok: true, hold: { status: "settled", settled_microrub: 3_000, allowance_id: allowance, source: "text" } });
    expect(await op(release)).toMatchObject({ ok: true, hold: { status: "released", allowance_id: allowance } });
    // The same commands again, over HTTP or later over the bus: nothing moves twice.
    expect(await op(settle)).toMatchObject({ ok: true, hold: { status: "settled" } });
    expect((await commands.settle(allowance, a.keyId, 5_000, 3_000, settled)).outcome).toBe("already");
    expect((await commands.release(allowance, a.keyId, 4_000, released)).outcome).toBe("already");
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 997_000, reserved_microrub: 91_000 });

    // The close over HTTP returns the rest at once: billing has recorded what it was closed with.
    expect(await op({ op: "release", hold_id: allowance, reason: "allowance closed", used_microrub: 9_000 })).toMatchObject({
      ok: true,
      hold: { status: "released" },
    });
    expect(await commands.close(allowance, 9_000)).toBe("already");
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 997_000, reserved_microrub: 0 });
    expect(await usage(a.keyId)).toMatchObject({ spent_microrub: 3_000, reserved_microrub: 0 });
    await h.assertBooksBalance();
  });
});

describe("the books check", () => {
  it("catches an allowance whose consumed disagrees with its requests' holds", async () => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const allowance = randomUUID();
    await op(grantOp(a.keyId, 100_000, 10_000, allowance));
    await commands.settle(allowance, a.keyId, 5_000, 4_000);
    await h.assertBooksBalance();
    const books = new BooksCheckService(new BooksRepository(h.db));
    // As if a request's estimate had left the allowance without its hold being recorded.
    await h.db.$executeRaw`UPDATE holds SET consumed = consumed + 1000 WHERE id = ${allowance}::uuid`;
    expect((await books.run()).discrepancies).toEqual(
      expect.arrayContaining([
        `allowance ${allowance} (active): consumed 6000, closed with -, but its requests' holds reserved 5000`,
        `key ${a.keyId}: reserved 95000 != its active holds 94000`,
      ]),
    );
    await h.db.$executeRaw`UPDATE holds SET consumed = consumed - 1000 WHERE id = ${allowance}::uuid`;
    await h.assertBooksBalance();
  });
});
