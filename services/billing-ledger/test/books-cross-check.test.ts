import { randomUUID } from "node:crypto";
import type { FinalHold, FinalHoldsResponse, Hold } from "@meter/contracts";
import { createLogger, Metrics, signGrant, verifyGrant } from "@meter/service-kit";
import { testGrantKeys } from "@meter/testing";
import { BooksCrossCheckService } from "../src/holds/books-cross-check.service";
import type { HoldOwners } from "../src/holds/hold-owners.adapter";
import { counterValue, placeOp, seedAccount, startBilling, testGrants, type BillingHarness } from "./support/billing-harness";

/** What text lists to the billing under test's own cross-check (the admin API's), as a test sets it. */
const listedByText: FinalHold[] = [];

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling({ owners: textOwner(listedByText) });
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

/** The text service's final records as the test decides them, a page of two at a time. */
function textOwner(records: FinalHold[], restoredAt: string | null = null, told: string[][] = []): HoldOwners {
  return {
    sources: () => ["text"],
    unknownAllowances(_source, ids) {
      told.push(ids);
      return Promise.resolve(ids);
    },
    audit: () => Promise.reject(new Error("not asked here")),
    finalHolds(_source, { after }): Promise<FinalHoldsResponse> {
      const from = after ? records.findIndex((r) => r.owner_ref === after.owner_ref) + 1 : 0;
      const holds = records.slice(from, from + 2);
      const next = from + 2 < records.length ? { final_at: holds.at(-1)!.final_at, owner_ref: holds.at(-1)!.owner_ref } : null;
      return Promise.resolve({ holds, next, restored_at: restoredAt });
    },
    close: () => Promise.resolve(),
  };
}

function crossCheck(owners: HoldOwners, graceMs = 0, metrics = new Metrics("billing-ledger")): BooksCrossCheckService {
  return new BooksCrossCheckService(
    h.services.holdReads,
    h.services.holds,
    owners,
    testGrants(),
    createLogger("cross-check-test", "silent"),
    {
      differences: metrics.counter("billing_books_cross_check_differences_total", "d", ["source", "kind"]),
      repaired: metrics.counter("billing_books_cross_check_repaired_total", "r", ["source", "kind"]),
    },
    graceMs,
  );
}

const YESTERDAY = new Date(Date.now() - 86_400_000);

function finalOf(a: { organizationId: string; keyId: string }, over: Partial<FinalHold> & Pick<FinalHold, "status">): FinalHold {
  const id = randomUUID();
  return {
    hold_id: id,
    owner_ref: id,
    organization_id: a.organizationId,
    key_id: a.keyId,
    operation: "text",
    model: "m",
    amount_microrub: 5_000,
    settled_microrub: over.status === "settled" ? 4_000 : null,
    final_at: YESTERDAY.toISOString(),
    ...over,
  };
}

/**
 * The record as its owner keeps it: with billing's signature of the grant that covers it, made before
 * billing's database lost the grant (its own hold's for its estimate, or its allowance's for
 * `allowanceAmount`), valid `validMs` from now.
 */
function signed(r: FinalHold, over: { allowanceAmount?: number; validMs?: number; source?: string } = {}): FinalHold {
  const amount = r.allowance ? over.allowanceAmount! : r.amount_microrub;
  const signature = signGrant(testGrantKeys(), {
    hold_id: r.allowance?.allowance_id ?? r.hold_id,
    kind: r.allowance ? "allowance" : "request",
    source: over.source ?? "text",
    organization_id: r.organization_id,
    key_id: r.key_id,
    amount_microrub: amount,
    expires_at: new Date(Date.now() + (over.validMs ?? 72 * 3_600_000)),
  });
  return { ...r, grant: { amount_microrub: amount, signature } };
}

/** A placement or grant as text sends it, answered as billing answers a holder: with its signature. */
async function asText(op: Parameters<BillingHarness["services"]["holds"]["answerAs"]>[1][number]): Promise<Hold> {
  const [answer] = await h.services.holds.answerAs("text", [op]);
  if (!answer || answer instanceof Error) throw answer ?? new Error("no answer");
  return answer;
}

async function balance(organizationId: string) {
  return (await h.call("GET", `/admin/v1/organizations/${organizationId}/balance`, { kind: "admin" }).expect(200)).body as {
    balance_microrub: number;
    reserved_microrub: number;
  };
}

it("recovers what billing lost from the owner's records once, even below zero, and reports what it cannot repair", async () => {
  const a = await seedAccount(h, { credit: 5_000, dailyBudget: 1_000_000 });
  const placed = await asText(placeOp(a.keyId, 3_000));
  const active = placed.hold_id;
  const charged = (await h.services.holds.place(placeOp(a.keyId, 1_000))).hold_id;
  await h.services.holds.settle(charged, 1_000);
  const records = [
    // Lost with billing's database: placed and settled in one step, on the owner's day.
    signed(finalOf(a, { status: "settled", final_at: YESTERDAY.toISOString() })),
    // A release billing never saw moved no money.
    finalOf(a, { status: "released", final_at: new Date(YESTERDAY.getTime() + 1).toISOString() }),
    // Still active at billing: settled as the owner decided.
    {
      ...finalOf(a, { status: "settled" }),
      hold_id: active,
      owner_ref: `req-${active}`,
      amount_microrub: 3_000,
      settled_microrub: 2_500,
      final_at: new Date().toISOString(),
      // As text keeps it: the signature billing answered its placement with.
      grant: { amount_microrub: 3_000, signature: placed.grant_signature! },
    },
    // Charged at billing, released at the owner: the first resolution stands, a person looks.
    { ...finalOf(a, { status: "released" }), hold_id: charged, owner_ref: `req-${charged}`, final_at: new Date().toISOString() },
  ];
  const check = crossCheck(textOwner(records));

  // Several passes at once (replicas, an operator's run beside the timer) charge nothing twice.
  const reports = await Promise.all([check.run(), check.run(), check.run()]);
  for (const r of reports) expect(r.owners).toEqual([{ source: "text", compared: 4, unreachable: false, restored_at: null, lost_in_restore: 0 }]);
  // Whichever pass got there first repaired each; the others found it repaired.
  const found = reports.flatMap((r) => r.differences);
  expect(new Set(found.map((d) => `${d.kind} ${d.hold_id}`))).toEqual(
    new Set([`missing_at_billing ${records[0]!.hold_id}`, `unresolved_at_billing ${active}`, `status_differs ${charged}`]),
  );
  for (const d of found) expect(d.repaired).toBe(d.kind !== "status_differs");
  // 5 000 credit - 1 000 - 2 500 - 4 000 recovered: 2 500 owed, shown as a negative balance.
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: -2_500, reserved_microrub: 0 }));
  const recovered = await h.services.holdReads.find(records[0]!.hold_id);
  expect(recovered).toMatchObject({ status: "settled", settled_microrub: 4_000, budget_day: YESTERDAY.toISOString().slice(0, 10) });
  expect(await h.services.holdReads.find(records[1]!.hold_id)).toBeUndefined();

  const again = await check.run();
  expect(again.differences.map((d) => d.kind)).toEqual(["status_differs"]);
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: -2_500 }));
  // Owing, the organization can place nothing until credits cover it.
  await expect(h.services.holds.place(placeOp(a.keyId, 1))).rejects.toMatchObject({ code: "insufficient_balance" });

  // A credit that covers the debt clears it, and the database's own rule (balance >= reserved) holds again.
  await h.services.accounts.credit(a.organizationId, 1_000, `partial-${a.organizationId}`);
  expect(await owes(a.organizationId)).toBe(true);
  await h.services.accounts.credit(a.organizationId, 2_000, `cover-${a.organizationId}`);
  expect(await owes(a.organizationId)).toBe(false);
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 500, available_microrub: 500 }));
});

async function owes(organizationId: string): Promise<boolean> {
  return (await h.db.organization.findUniqueOrThrow({ where: { id: organizationId } })).owes;
}

it("tells billing's charges an owner lost in its restore from those it cannot explain", async () => {
  const a = await seedAccount(h, { credit: 100_000, dailyBudget: 1_000_000 });
  const listed = finalOf(a, { status: "settled", final_at: new Date(Date.now() - 60_000).toISOString() });
  await h.services.holds.apply([{ ...placeOp(a.keyId, 5_000, listed.hold_id), owner_ref: listed.owner_ref }]);
  await h.services.holds.settle(listed.hold_id, 4_000);
  const unlisted = (await h.services.holds.place(placeOp(a.keyId, 2_000))).hold_id;
  await h.services.holds.settle(unlisted, 2_000);
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '10 seconds' WHERE id = ${unlisted}::uuid`;
  const mine = (r: Awaited<ReturnType<BooksCrossCheckService["run"]>>) => r.differences.filter((d) => d.hold_id === unlisted);

  const neverRestored = await crossCheck(textOwner([listed])).run();
  expect(mine(neverRestored)).toEqual([expect.objectContaining({ kind: "missing_at_owner", repaired: false })]);

  const restored = await crossCheck(textOwner([listed], new Date().toISOString())).run();
  expect(mine(restored)).toEqual([]);
  expect(restored.owners[0]!.lost_in_restore).toBeGreaterThanOrEqual(1);
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 100_000 - 4_000 - 2_000 }));
});

it("leaves a request on an allowance to its own settlement while that may still be on its way", async () => {
  const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
  const allowanceId = randomUUID();
  await h.services.holds.apply([
    { op: "grant", hold_id: allowanceId, key_id: a.keyId, amount_microrub: 50_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: "al" },
  ]);
  // Text settled a request on the allowance a moment ago; its command has not reached billing yet.
  const made = finalOf(a, { status: "settled", final_at: new Date().toISOString() });
  const spend = { allowance_id: allowanceId, key_id: a.keyId, reserved_microrub: 5_000, operation: "text" as const, model: "m", owner_ref: made.owner_ref };
  const record = { ...made, allowance: spend };
  const pass = await crossCheck(textOwner([record]), 60_000).run();
  expect(pass.differences).toEqual([]);
  expect(await h.services.holdReads.find(record.hold_id)).toBeUndefined();

  // The command arrives: the request is charged once, its estimate taken from the allowance.
  const [applied] = await h.services.holds.apply([{ op: "settle", hold_id: record.hold_id, amount_microrub: 4_000, source: "text", allowance: spend }]);
  expect(applied).toMatchObject({ outcome: "settled" });
  expect((await crossCheck(textOwner([record]), 60_000).run()).differences).toEqual([]);
  expect(await h.services.holdReads.find(allowanceId)).toMatchObject({ consumed_microrub: 5_000 });
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 996_000, reserved_microrub: 45_000 }));
  await h.services.holds.apply([{ op: "release", hold_id: allowanceId, reason: "idle", used_microrub: 5_000 }]);
});

it("repairs a request on an allowance whose command was lost as that command: charged once, taken from the allowance, which then closes", async () => {
  const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
  const allowanceId = randomUUID();
  await h.services.holds.apply([
    { op: "grant", hold_id: allowanceId, key_id: a.keyId, amount_microrub: 50_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: "al" },
  ]);
  const spendOf = (r: FinalHold) => ({
    allowance_id: allowanceId,
    key_id: a.keyId,
    reserved_microrub: 5_000,
    operation: "text" as const,
    model: "m",
    owner_ref: r.owner_ref,
  });
  const settled = finalOf(a, { status: "settled" });
  const released = finalOf(a, { status: "released" });
  const records = [settled, released].map((r) => signed({ ...r, allowance: spendOf(r) }, { allowanceAmount: 50_000 }));
  // The holder closed the allowance with both requests' estimates; neither command ever arrived.
  await h.services.holds.apply([{ op: "release", hold_id: allowanceId, reason: "idle", used_microrub: 10_000, source: "text" }]);

  // (Other tests' charges are billing's alone here: only this test's records are compared.)
  const ours = (d: { hold_id: string }) => records.some((r) => r.hold_id === d.hold_id);
  const pass = await crossCheck(textOwner(records)).run();
  expect(pass.differences.filter(ours).map((d) => [d.kind, d.repaired])).toEqual([
    ["missing_at_billing", true],
    ["missing_at_billing", true],
  ]);
  expect(await h.services.holdReads.find(settled.hold_id)).toMatchObject({ status: "settled", settled_microrub: 4_000, allowance_id: allowanceId });
  expect(await h.services.holdReads.find(released.hold_id)).toMatchObject({ status: "released", allowance_id: allowanceId });
  // The allowance got its requests and closed: nothing stays reserved, one charge.
  expect(await h.services.holdReads.find(allowanceId)).toMatchObject({ status: "released", consumed_microrub: 10_000 });
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 996_000, reserved_microrub: 0 }));
  // A second pass, or the late command itself, changes nothing.
  expect((await crossCheck(textOwner(records)).run()).differences.filter(ours)).toEqual([]);
  const [late] = await h.services.holds.apply([
    { op: "settle", hold_id: settled.hold_id, amount_microrub: 4_000, source: "text", allowance: spendOf(settled) },
  ]);
  expect(late).toMatchObject({ outcome: "already" });
});

it("recovers requests on an allowance billing lost (restored from before its grant) as holds of their own, at once, and tells the holder to close it", async () => {
  const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
  // Never granted in billing's restored database; the other returned by its holder before billing heard of it (a tombstone).
  const [lost, tombstone] = [randomUUID(), randomUUID()];
  await h.services.holds.apply([
    { op: "release", hold_id: tombstone, organization_id: a.organizationId, reason: "allowance closed", used_microrub: 5_000, source: "text" },
  ]);
  const on = (allowanceId: string, over: Partial<FinalHold> & Pick<FinalHold, "status">): FinalHold => {
    const r = finalOf(a, { ...over, final_at: new Date().toISOString() });
    return { ...r, allowance: { allowance_id: allowanceId, key_id: a.keyId, reserved_microrub: 5_000, operation: "text", model: "m", owner_ref: r.owner_ref } };
  };
  const records = [on(lost, { status: "settled" }), on(lost, { status: "released" }), on(tombstone, { status: "settled" })].map((r) =>
    signed(r, { allowanceAmount: 20_000 }),
  );
  const ours = (d: { hold_id: string }) => records.some((r) => r.hold_id === d.hold_id);
  const told: string[][] = [];

  // Made final a moment ago, yet no command can ever apply to an allowance billing does not have: repaired now.
  const pass = await crossCheck(textOwner(records, null, told), 60_000).run();
  expect(pass.differences.filter(ours).map((d) => [d.hold_id, d.kind, d.repaired])).toEqual([
    [records[0]!.hold_id, "missing_at_billing", true],
    [records[2]!.hold_id, "missing_at_billing", true],
  ]);
  expect(await h.services.holdReads.find(records[0]!.hold_id)).toMatchObject({ status: "settled", settled_microrub: 4_000, allowance_id: null });
  expect(await h.services.holdReads.find(records[1]!.hold_id)).toBeUndefined();
  expect(told).toEqual([[lost, tombstone]]);
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 992_000, reserved_microrub: 0 }));

  // Once: a second pass finds nothing, and the requests' own commands, arriving late, charge nothing more.
  expect((await crossCheck(textOwner(records, null, told)).run()).differences.filter(ours)).toEqual([]);
  const late = await h.services.holds.apply(
    [records[0]!, records[2]!].map((r) => ({
      op: "settle" as const,
      hold_id: r.hold_id,
      amount_microrub: 4_000,
      source: "text" as const,
      allowance: r.allowance!,
    })),
  );
  for (const r of late) expect(r).toMatchObject({ outcome: "conflict" });
  expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 992_000, reserved_microrub: 0 }));
});

describe("an owner's listing speaks only for its own holds", () => {
  /** Rows a compromised text writes into its own database, listed to billing as its final records. */
  async function forged() {
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    const b = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    // A media-jobs job's hold, still active at billing.
    const job = randomUUID();
    await h.services.holds.apply([
      { op: "place", hold_id: job, key_id: a.keyId, amount_microrub: 50_000, operation: "image_edit", model: "m", source: "media-jobs", owner_ref: job },
    ]);
    // A media-jobs allowance.
    const mediaAllowance = randomUUID();
    await h.services.holds.apply([
      {
        op: "grant",
        hold_id: mediaAllowance,
        key_id: a.keyId,
        amount_microrub: 50_000,
        min_microrub: 1_000,
        operation: "ocr",
        source: "media-jobs",
        owner_ref: "al",
      },
    ]);
    const onAllowance = finalOf(a, { status: "settled" });
    const rows = {
      // Settles another service's hold.
      foreignHold: { ...finalOf(a, { status: "settled" }), hold_id: job, owner_ref: randomUUID(), amount_microrub: 50_000, settled_microrub: 50_000 },
      // Charges organization b through a's key.
      otherOrganization: { ...finalOf(a, { status: "settled" }), organization_id: b.organizationId, amount_microrub: 600_000, settled_microrub: 600_000 },
      // Charges more than the estimate it was placed with.
      overEstimate: finalOf(a, { status: "settled", amount_microrub: 1_000, settled_microrub: 900_000 }),
      // An operation text places no holds for.
      notServed: finalOf(a, { status: "settled", operation: "image_edit" }),
      // A request on media-jobs' allowance.
      foreignAllowance: {
        ...onAllowance,
        allowance: {
          allowance_id: mediaAllowance,
          key_id: a.keyId,
          reserved_microrub: 5_000,
          operation: "text" as const,
          model: "m",
          owner_ref: onAllowance.owner_ref,
        },
      },
    };
    return { a, b, job, mediaAllowance, rows };
  }

  it.each([false, true])("reports them for a person and moves nothing (repair %s)", async (repair) => {
    const { a, b, job, mediaAllowance, rows } = await forged();
    const records = Object.values(rows);
    const ours = (d: { hold_id: string }) => records.some((r) => r.hold_id === d.hold_id);
    const metrics = new Metrics("billing-ledger");
    const check = crossCheck(textOwner(records), 0, metrics);

    const report = await check.run({ repair });
    const found = Object.fromEntries(report.differences.filter(ours).map((d) => [d.hold_id, d]));
    expect(found).toEqual({
      [job]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "foreign_hold", repaired: false }),
      [rows.otherOrganization.hold_id]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "key_not_of_organization", repaired: false }),
      [rows.overEstimate.hold_id]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "settled_over_estimate", repaired: false }),
      [rows.notServed.hold_id]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "operation_not_served", repaired: false }),
      [rows.foreignAllowance.hold_id]: expect.objectContaining({ kind: "rejected_owner_claim", rejected: "foreign_hold", repaired: false }),
    });
    // Counted for the operator's dashboards.
    expect(await counterValue(metrics, "billing_books_cross_check_differences_total", { source: "text", kind: "rejected_owner_claim" })).toBe(5);

    // Nothing moved: media-jobs' hold and allowance as they were, neither organization charged.
    expect(await h.services.holdReads.find(job)).toMatchObject({ status: "active", settled_microrub: null });
    expect(await h.services.holdReads.find(mediaAllowance)).toMatchObject({ status: "active", consumed_microrub: 0 });
    for (const r of [rows.otherOrganization, rows.overEstimate, rows.notServed, rows.foreignAllowance]) {
      expect(await h.services.holdReads.find(r.hold_id)).toBeUndefined();
    }
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 1_000_000, reserved_microrub: 100_000 }));
    expect(await balance(b.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 1_000_000, reserved_microrub: 0 }));

    // Every pass reports them again; none moves anything.
    expect((await check.run()).differences.filter(ours)).toHaveLength(5);
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 1_000_000, reserved_microrub: 100_000 }));
    await h.services.holds.apply([
      { op: "release", hold_id: job, reason: "test", source: "media-jobs" },
      { op: "release", hold_id: mediaAllowance, reason: "test", source: "media-jobs" },
    ]);
  });
});

describe("only billing's own word moves money", () => {
  it.each([false, true])("a record no signature of billing covers moves nothing, is reported unverifiable with what it claims (repair %s)", async (repair) => {
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    const b = await seedAccount(h, { credit: 100_000_000, dailyBudget: 1_000_000_000 });
    const stale = finalOf(b, { status: "settled", amount_microrub: 10_000, settled_microrub: 10_000 });
    const grantOfA = signed(finalOf(a, { status: "settled" }));
    const rows = {
      // The second reproduction: b's key, a completed request of 500 000 000 with a hold id billing never saw.
      forged: finalOf(b, { status: "settled", amount_microrub: 500_000_000, settled_microrub: 500_000_000 }),
      // A's grant, its signature copied onto b's record (b's own key, so nothing else gives it away).
      copied: { ...finalOf(b, { status: "settled" }), hold_id: grantOfA.hold_id, grant: grantOfA.grant! },
      // A real grant of 5 000, claimed for more.
      overSigned: { ...signed(finalOf(b, { status: "settled" })), amount_microrub: 9_000, settled_microrub: 9_000 },
      // Final after billing would have expired its hold.
      expired: signed(finalOf(b, { status: "settled", final_at: new Date().toISOString() }), { validMs: -60_000 }),
      // Signed for media-jobs, listed by text.
      otherService: signed(finalOf(b, { status: "settled" }), { source: "media-jobs" }),
      // A grant billing never signed (another key made it).
      unknownKey: { ...finalOf(b, { status: "settled" }), grant: { amount_microrub: 5_000, signature: `someone-else.${Date.now()}.c2lnbmF0dXJl` } },
      // Still active at billing, released at the owner, with no signature: the hold audit resolves it on the owner's word, not this.
      unsignedRelease: { ...finalOf(b, { status: "released" }), hold_id: (await h.services.holds.place(placeOp(b.keyId, 1_000))).hold_id },
      // Made before grants were signed.
      stale,
    };
    const records = Object.values(rows);
    const ours = (d: { hold_id: string }) => records.some((r) => r.hold_id === d.hold_id);
    const metrics = new Metrics("billing-ledger");

    const report = await crossCheck(textOwner(records), 0, metrics).run({ repair });
    const found = Object.fromEntries(report.differences.filter(ours).map((d) => [d.hold_id, [d.kind, d.unverified, d.would_repair, d.repaired]]));
    expect(found).toEqual({
      [rows.forged.hold_id]: ["unverifiable", "unsigned", "missing_at_billing", false],
      [rows.copied.hold_id]: ["unverifiable", "bad_signature", "missing_at_billing", false],
      [rows.overSigned.hold_id]: ["unverifiable", "over_signed_amount", "missing_at_billing", false],
      [rows.expired.hold_id]: ["unverifiable", "grant_expired", "missing_at_billing", false],
      [rows.otherService.hold_id]: ["unverifiable", "bad_signature", "missing_at_billing", false],
      [rows.unknownKey.hold_id]: ["unverifiable", "unknown_key", "missing_at_billing", false],
      [rows.unsignedRelease.hold_id]: ["unverifiable", "unsigned", "unresolved_at_billing", false],
      [stale.hold_id]: ["unverifiable", "unsigned", "missing_at_billing", false],
    });
    // What each claims, for the person who looks.
    expect(report.differences.find((d) => d.hold_id === rows.forged.hold_id)!.owner).toMatchObject({ settled_microrub: 500_000_000, key_id: b.keyId });
    expect(await counterValue(metrics, "billing_books_cross_check_differences_total", { source: "text", kind: "unverifiable" })).toBe(8);

    for (const r of records.filter((r) => r !== rows.unsignedRelease)) expect(await h.services.holdReads.find(r.hold_id)).toBeUndefined();
    expect(await h.services.holdReads.find(rows.unsignedRelease.hold_id)).toMatchObject({ status: "active" });
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 1_000_000, reserved_microrub: 0 }));
    expect(await balance(b.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 100_000_000, reserved_microrub: 1_000 }));
    await h.services.holds.release(rows.unsignedRelease.hold_id, "test");
  });

  it("recovers the requests of an allowance billing lost never past its signed amount, all of them together", async () => {
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    const lost = randomUUID();
    const on = () => {
      const r = finalOf(a, { status: "settled", amount_microrub: 4_000, settled_microrub: 3_000 });
      return signed(
        { ...r, allowance: { allowance_id: lost, key_id: a.keyId, reserved_microrub: 4_000, operation: "text", model: "m", owner_ref: r.owner_ref } },
        { allowanceAmount: 10_000 },
      );
    };
    // A third request on an allowance of 10 000 whose requests each held 4 000 cannot be billing's word.
    const records = [on(), on(), on()];
    const ours = (d: { hold_id: string }) => records.some((r) => r.hold_id === d.hold_id);
    const check = crossCheck(textOwner(records));

    const reports = await Promise.all([check.run(), check.run()]);
    const outcome = new Map(reports.flatMap((r) => r.differences.filter(ours)).map((d) => [d.hold_id, `${d.kind}/${d.unverified ?? ""}`]));
    expect([...outcome.values()].sort()).toEqual(["missing_at_billing/", "missing_at_billing/", "unverifiable/over_signed_amount"]);
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 994_000, reserved_microrub: 0 }));
    // Another pass recovers nothing more.
    expect((await check.run()).differences.filter(ours).map((d) => d.kind)).toEqual(["unverifiable"]);
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 994_000 }));
  });

  it("an operator repairs an unverifiable record by hand, once, through the admin API, and the ledger says why", async () => {
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    // A request from before grants were signed, settled at text; billing's database lost it.
    const old = finalOf(a, { status: "settled", amount_microrub: 7_000, settled_microrub: 6_000 });
    const foreign = { ...finalOf(a, { status: "settled" }), operation: "ocr" as const };
    listedByText.push(old, foreign);
    const path = (id: string) => `/admin/v1/books/cross-check/holds/${id}/repair`;

    const report = await h.call("POST", "/admin/v1/books/cross-check", { kind: "admin" }, {}).expect(200);
    expect((report.body as { differences: { hold_id: string; kind: string }[] }).differences).toEqual(
      expect.arrayContaining([expect.objectContaining({ hold_id: old.hold_id, kind: "unverifiable", unverified: "unsigned" })]),
    );
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 1_000_000 }));

    await h.call("POST", path(old.hold_id), { kind: "admin" }, {}).expect(400);
    const repaired = await h.call("POST", path(old.hold_id), { kind: "admin" }, { reason: "ticket 4711: the client's answer shows the charge" }).expect(200);
    expect(repaired.body).toMatchObject({ outcome: "recovered", difference: { hold_id: old.hold_id, kind: "missing_at_billing", repaired: true } });
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 994_000 }));
    const entries = await h.db.ledgerEntry.findMany({ where: { holdId: old.hold_id }, orderBy: { id: "asc" } });
    expect(entries.map((e) => [e.kind, Number(e.amount), e.reference])).toEqual([
      ["hold", 7_000, "repaired by hand: ticket 4711: the client's answer shows the charge"],
      ["settle", 6_000, "repaired by hand: ticket 4711: the client's answer shows the charge"],
    ]);

    // Once: it needs no repair now. A claim no owner may make, or a hold nobody lists, is refused by hand too.
    await h.call("POST", path(old.hold_id), { kind: "admin" }, { reason: "again" }).expect(409);
    const refused = await h.call("POST", path(foreign.hold_id), { kind: "admin" }, { reason: "try" }).expect(409);
    expect((refused.body as { error: { message: string } }).error.message).toMatch(/operation_not_served/);
    await h.call("POST", path(randomUUID()), { kind: "admin" }, { reason: "try" }).expect(404);
    expect(await balance(a.organizationId)).toEqual(expect.objectContaining({ balance_microrub: 994_000 }));
    listedByText.splice(0);
  });
});

describe("billing answers what it grants with its signature", () => {
  it("over the hold id, kind, service, organization, key, amount and expiry of each placement and grant; none on a tombstone", async () => {
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000_000 });
    const placed = await asText(placeOp(a.keyId, 3_000));
    const granted = await asText({
      op: "grant",
      hold_id: randomUUID(),
      key_id: a.keyId,
      amount_microrub: 40_000,
      min_microrub: 1_000,
      operation: "text",
      source: "text",
      owner_ref: "al",
    });
    const [tombstone] = await h.services.holds.answerAs("text", [
      { op: "release", hold_id: randomUUID(), organization_id: a.organizationId, reason: "given up" },
    ]);
    expect(tombstone).toMatchObject({ status: "released" });
    expect((tombstone as Hold).grant_signature).toBeUndefined();

    const keys = testGrantKeys();
    const expiry = (hold: Hold) => Date.parse(hold.created_at) + 72 * 3_600_000;
    for (const [hold, kind] of [
      [placed, "request"],
      [granted, "allowance"],
    ] as const) {
      const claim = { hold_id: hold.hold_id, kind, source: "text", organization_id: a.organizationId, key_id: a.keyId, amount_microrub: hold.amount_microrub };
      const verified = verifyGrant(keys.trusted, claim, hold.grant_signature);
      expect(verified).toEqual({ ok: true, grant: { ...claim, expires_at: new Date(Math.floor(expiry(hold) / 1000) * 1000) } });
      // Any other field, and the signature no longer vouches for it.
      for (const other of [
        { amount_microrub: hold.amount_microrub + 1 },
        { key_id: randomUUID() },
        { organization_id: randomUUID() },
        { source: "media-jobs" },
      ]) {
        expect(verifyGrant(keys.trusted, { ...claim, ...other }, hold.grant_signature)).toEqual({ ok: false, refused: "bad_signature" });
      }
    }
    await h.services.holds.apply([
      { op: "release", hold_id: placed.hold_id, reason: "test" },
      { op: "release", hold_id: granted.hold_id, reason: "test" },
    ]);
  });
});
