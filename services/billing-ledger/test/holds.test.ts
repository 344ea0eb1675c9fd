import { randomUUID } from "node:crypto";
import { SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

const place = (keyId: string, amount: number, holdId: string = randomUUID()) =>
  h
    .call("POST", "/internal/v1/holds", SERVICE)
    .send({ hold_id: holdId, key_id: keyId, amount_microrub: amount, operation: "text", model: "m", source: "text" });
const settle = (holdId: string, amount: number) =>
  h.call("POST", `/internal/v1/holds/${holdId}/settle`, SERVICE).send({ amount_microrub: amount });
const release = (holdId: string, reason = "test") =>
  h.call("POST", `/internal/v1/holds/${holdId}/release`, SERVICE).send({ reason });
const balance = async (orgId: string) => (await h.call("GET", `/admin/v1/organizations/${orgId}/balance`).expect(200)).body;

describe("holds", () => {
  it("reserves, then settles for the actual cost, charging only that", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    const placed = await place(a.keyId, 3_000, holdId).expect(201);
    expect(placed.body).toMatchObject({ hold_id: holdId, status: "active", amount_microrub: 3_000, organization_id: a.organizationId });
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 10_000, reserved_microrub: 3_000, available_microrub: 7_000 });

    const settled = await settle(holdId, 1_234).expect(200);
    expect(settled.body).toMatchObject({ status: "settled", settled_microrub: 1_234 });
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 8_766, reserved_microrub: 0, available_microrub: 8_766 });

    const usage = await h.call("GET", `/admin/v1/keys/${a.keyId}/usage`).expect(200);
    expect(usage.body).toMatchObject({ spent_microrub: 1_234, reserved_microrub: 0 });
  });

  it("is idempotent on the hold id: a replay reserves nothing more", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await place(a.keyId, 4_000, holdId).expect(201);
    const again = await place(a.keyId, 4_000, holdId).expect(200);
    expect(again.body.status).toBe("active");
    expect((await balance(a.organizationId)).reserved_microrub).toBe(4_000);
    // The same id with other parameters is a caller bug, refused.
    await place(a.keyId, 5_000, holdId).expect(409);
  });

  it("resolves a hold exactly once", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await place(a.keyId, 2_000, holdId).expect(201);
    await settle(holdId, 2_000).expect(200);
    await settle(holdId, 2_000).expect(200); // the same settlement again is a no-op
    const conflicting = await settle(holdId, 1_000).expect(409);
    expect(conflicting.body.error.code).toBe("hold_already_resolved");
    await release(holdId).expect(409);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 8_000, reserved_microrub: 0 });

    const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
    const kinds = ledger.body.data.filter((e: { hold_id: string }) => e.hold_id === holdId).map((e: { kind: string }) => e.kind);
    expect(kinds.sort()).toEqual(["hold", "settle"]);
  });

  it("releases with nothing charged, and a release is idempotent", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await place(a.keyId, 2_500, holdId).expect(201);
    expect((await release(holdId).expect(200)).body.status).toBe("released");
    await release(holdId).expect(200);
    await settle(holdId, 100).expect(409);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 10_000, reserved_microrub: 0, available_microrub: 10_000 });
  });

  it("never settles more than was held", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await place(a.keyId, 1_000, holdId).expect(201);
    const res = await settle(holdId, 1_001).expect(422);
    expect(res.body.error.code).toBe("settle_exceeds_hold");
    expect((await balance(a.organizationId)).reserved_microrub).toBe(1_000);
    await settle(holdId, 1_000).expect(200);
  });

  it("a release that arrives before its placement makes the late placement place nothing", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    expect((await release(holdId, "caller gave up").expect(200)).body).toMatchObject({ status: "released", amount_microrub: 0 });
    const late = await place(a.keyId, 3_000, holdId).expect(200);
    expect(late.body.status).toBe("released");
    expect((await balance(a.organizationId)).reserved_microrub).toBe(0);
  });

  it("refuses a hold the balance or the daily budget cannot cover, reserving nothing", async () => {
    const poor = await seedAccount(h, { credit: 1_000 });
    const r1 = await place(poor.keyId, 1_001).expect(402);
    expect(r1.body.error.code).toBe("insufficient_balance");

    const capped = await seedAccount(h, { credit: 1_000_000, dailyBudget: 5_000 });
    await place(capped.keyId, 5_000).expect(201);
    const r2 = await place(capped.keyId, 1).expect(429);
    expect(r2.body.error.code).toBe("daily_budget_exceeded");
    expect((await balance(capped.organizationId)).reserved_microrub).toBe(5_000);
  });

  it("refuses holds for a revoked key", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    await h.call("POST", `/admin/v1/keys/${a.keyId}/revoke`).expect(200);
    const res = await place(a.keyId, 10).expect(401);
    expect(res.body.error.code).toBe("invalid_api_key");
  });

  it("settles unknown holds never", async () => {
    const res = await settle(randomUUID(), 1).expect(404);
    expect(res.body.error.code).toBe("not_found");
  });

  it("applies a batch of operations in one call, each succeeding or failing on its own", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const settled = randomUUID();
    await place(a.keyId, 1_000, settled).expect(201);
    const fresh = randomUUID();
    const res = await h
      .call("POST", "/internal/v1/hold-ops", SERVICE)
      .send({
        ops: [
          { op: "place", hold_id: fresh, key_id: a.keyId, amount_microrub: 2_000, operation: "text", model: "m", source: "text" },
          { op: "place", hold_id: randomUUID(), key_id: a.keyId, amount_microrub: 1_000_000, operation: "text", model: "m", source: "text" },
          { op: "settle", hold_id: settled, amount_microrub: 700 },
          { op: "settle", hold_id: randomUUID(), amount_microrub: 1 },
          { op: "release", hold_id: fresh, reason: "changed my mind" },
        ],
      })
      .expect(200);
    expect(res.body.results.map((r: { ok: boolean; hold?: { status: string }; error?: { code: string } }) => (r.ok ? r.hold!.status : r.error!.code))).toEqual([
      "active",
      "insufficient_balance",
      "settled",
      "not_found",
      "released",
    ]);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 9_300, reserved_microrub: 0 });
  });

  it("accepts only signed service callers on the internal API", async () => {
    await h.call("POST", "/internal/v1/holds", { kind: "admin" }).send({}).expect(403);
  });
});
