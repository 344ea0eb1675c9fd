import { randomUUID } from "node:crypto";
import { placeOp, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * The daily budget counts the key's charges settled since 00:00 of the budget day (BUDGET_TIMEZONE)
 * plus every hold of the key still active, whenever placed; a settlement counts on the day it is
 * settled. The clock of hold operations and budget reads is moved across midnight here.
 */
describe.each([
  // zone, 23:59 of 14 January there, 00:01 of 15 January there
  ["Asia/Vladivostok", "2026-01-14T13:59:00Z", "2026-01-14T14:01:00Z"],
  ["America/Los_Angeles", "2026-01-15T07:59:00Z", "2026-01-15T08:01:00Z"],
])("with BUDGET_TIMEZONE %s", (timezone, beforeMidnight, afterMidnight) => {
  let h: BillingHarness;
  let now = new Date(beforeMidnight);
  beforeAll(async () => {
    h = await startBilling({ timezone, clock: () => now });
  });
  afterAll(async () => {
    await h.assertBooksBalance();
    await h.close();
  });
  const usage = async (keyId: string) => (await h.call("GET", `/admin/v1/keys/${keyId}/usage`).expect(200)).body;

  it("a hold placed at 23:59 still counts after midnight, and its settlement counts on the day it is settled", async () => {
    now = new Date(beforeMidnight);
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000 });
    const lateHold = randomUUID();
    const placed = await h.services.holds.place(placeOp(a.keyId, 6_000, lateHold));
    expect(placed).toMatchObject({ status: "active", budget_day: null });
    expect(await usage(a.keyId)).toMatchObject({ day: "2026-01-14", timezone, spent_microrub: 0, reserved_microrub: 6_000, remaining_microrub: 4_000 });

    now = new Date(afterMidnight);
    expect(await usage(a.keyId)).toMatchObject({ day: "2026-01-15", spent_microrub: 0, reserved_microrub: 6_000, remaining_microrub: 4_000 });
    // Yesterday's hold is still active, so today's budget has 4_000 left, not 10_000.
    await expect(h.services.holds.place(placeOp(a.keyId, 5_000))).rejects.toMatchObject({ code: "daily_budget_exceeded" });

    const settled = await h.services.holds.settle(lateHold, 5_000);
    expect(settled).toMatchObject({ status: "settled", settled_microrub: 5_000, budget_day: "2026-01-15" });
    expect(await usage(a.keyId)).toMatchObject({ day: "2026-01-15", spent_microrub: 5_000, reserved_microrub: 0, remaining_microrub: 5_000 });
    const days = await h.db.keyDailyUsage.findMany({ where: { keyId: a.keyId } });
    expect(days.map((d) => [d.day.toISOString().slice(0, 10), d.spent])).toEqual([["2026-01-15", 5_000n]]);

    expect(await h.services.holds.place(placeOp(a.keyId, 5_000))).toMatchObject({ status: "active" });
    await expect(h.services.holds.place(placeOp(a.keyId, 1))).rejects.toMatchObject({ code: "daily_budget_exceeded" });
  });

  it("an allowance granted at 23:59 is usable until midnight there; its requests count on the day they settle", async () => {
    now = new Date(beforeMidnight);
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 40_000 });
    const allowanceId = randomUUID();
    const [granted] = await h.services.holds.answerAs("text", [
      { op: "grant", hold_id: allowanceId, key_id: a.keyId, amount_microrub: 10_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: "al" },
    ]);
    expect(granted).toMatchObject({
      kind: "allowance",
      amount_microrub: 10_000,
      usable_until: new Date(afterMidnight).toISOString().replace(":01:00", ":00:00"),
    });

    now = new Date(afterMidnight);
    const request = randomUUID();
    const spend = { allowance_id: allowanceId, key_id: a.keyId, reserved_microrub: 4_000, operation: "text" as const, model: "m", owner_ref: `req-${request}` };
    await h.services.holds.apply([{ op: "settle", hold_id: request, amount_microrub: 3_000, source: "text", allowance: spend }]);
    expect(await h.services.holdReads.find(request)).toMatchObject({ budget_day: "2026-01-15" });
    expect(await usage(a.keyId)).toMatchObject({ day: "2026-01-15", spent_microrub: 3_000, reserved_microrub: 6_000, remaining_microrub: 31_000 });
    await h.services.holds.apply([{ op: "release", hold_id: allowanceId, reason: "past its budget day", used_microrub: 4_000 }]);
    expect(await usage(a.keyId)).toMatchObject({ spent_microrub: 3_000, reserved_microrub: 0 });
  });

  it("charges settled yesterday do not count today", async () => {
    now = new Date(beforeMidnight);
    const a = await seedAccount(h, { credit: 1_000_000, dailyBudget: 10_000 });
    const hold = await h.services.holds.place(placeOp(a.keyId, 10_000));
    await h.services.holds.settle(hold.hold_id, 9_000);
    await expect(h.services.holds.place(placeOp(a.keyId, 1_001))).rejects.toMatchObject({ code: "daily_budget_exceeded" });

    now = new Date(afterMidnight);
    expect(await usage(a.keyId)).toMatchObject({ day: "2026-01-15", spent_microrub: 0, reserved_microrub: 0, remaining_microrub: 10_000 });
    expect(await h.services.holds.place(placeOp(a.keyId, 10_000))).toMatchObject({ status: "active" });
  });
});

it("the raw pool reads a DATE as the database's day, whatever the process's time zone", async () => {
  const h = await startBilling();
  try {
    const { rows } = await h.database.pool.query<{ d: unknown }>("SELECT DATE '2026-01-15' AS d");
    expect(rows[0]!.d).toBe("2026-01-15");
  } finally {
    await h.close();
  }
});
