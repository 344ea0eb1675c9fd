import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { BillingEndpoints, type HoldOpsResponse } from "@meter/contracts";
import { counterValue, holdCalls, placeOp, SERVICE, SERVICE_DIR, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
let ops: ReturnType<typeof holdCalls>;
beforeAll(async () => {
  h = await startBilling();
  ops = holdCalls(h);
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

const balance = async (orgId: string) => (await h.call("GET", `/admin/v1/organizations/${orgId}/balance`).expect(200)).body;
const code = (r: { body: Record<string, unknown> }) => (r.body.error as { code?: string } | undefined)?.code;

describe("holds", () => {
  it("reserves, then settles for the actual cost, charging only that", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    const placed = await ops.place(a.keyId, 3_000, holdId);
    expect(placed).toMatchObject({ status: 200, body: { hold_id: holdId, status: "active", amount_microrub: 3_000, organization_id: a.organizationId } });
    expect(placed.body).toMatchObject({ source: "text", owner_ref: `req-${holdId}`, budget_day: null });
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 10_000, reserved_microrub: 3_000, available_microrub: 7_000 });

    const settled = await ops.settle(holdId, 1_234);
    expect(settled.body).toMatchObject({ status: "settled", settled_microrub: 1_234 });
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 8_766, reserved_microrub: 0, available_microrub: 8_766 });

    const usage = await h.call("GET", `/admin/v1/keys/${a.keyId}/usage`).expect(200);
    expect(usage.body).toMatchObject({ spent_microrub: 1_234, reserved_microrub: 0, day: settled.body.budget_day });
  });

  it("refuses a NUL character in owner_ref or model with a code, reserving nothing (it was a 500)", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const bad = [
      { ...placeOp(a.keyId, 3_000), owner_ref: "req-a\u0000b" },
      { ...placeOp(a.keyId, 3_000), model: "m\u0000" },
    ];
    const good = placeOp(a.keyId, 1_000);
    const res = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [...bad, good] }).expect(200);
    const results = (res.body as HoldOpsResponse).results;
    expect(results.map((r) => (r.ok ? "ok" : [r.error.status, r.error.code]))).toEqual([[400, "invalid_request"], [400, "invalid_request"], "ok"]);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 10_000, reserved_microrub: 1_000 });
    await ops.release(good.hold_id);
  });

  it("is idempotent on the hold id: a replay reserves nothing more", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await ops.place(a.keyId, 4_000, holdId);
    const again = await ops.place(a.keyId, 4_000, holdId);
    expect(again).toMatchObject({ status: 200, body: { status: "active" } });
    expect((await balance(a.organizationId)).reserved_microrub).toBe(4_000);
    // The same id with other parameters is a caller bug, refused.
    const reused = await ops.place(a.keyId, 5_000, holdId);
    expect(reused.status).toBe(409);
    expect(code(reused)).toBe("conflict");
  });

  it("keeps a hold id per organization: two organizations place, settle and are charged for one id apart", async () => {
    const [a, b] = await Promise.all([seedAccount(h, { credit: 10_000 }), seedAccount(h, { credit: 10_000 })]);
    const holdId = randomUUID();
    expect(await ops.place(a.keyId, 3_000, holdId)).toMatchObject({ status: 200, body: { organization_id: a.organizationId } });
    expect(await ops.place(b.keyId, 2_000, holdId)).toMatchObject({ status: 200, body: { organization_id: b.organizationId, amount_microrub: 2_000 } });
    const settle = (organizationId: string, amount: number) =>
      h.call("POST", BillingEndpoints.holdOps.path, SERVICE, {
        ops: [{ op: "settle", hold_id: holdId, organization_id: organizationId, amount_microrub: amount }],
      });
    await settle(a.organizationId, 1_500).expect(200);
    await settle(b.organizationId, 700).expect(200);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 8_500, reserved_microrub: 0 });
    expect(await balance(b.organizationId)).toMatchObject({ balance_microrub: 9_300, reserved_microrub: 0 });
  });

  it("resolves a hold exactly once", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await ops.place(a.keyId, 2_000, holdId);
    expect((await ops.settle(holdId, 2_000)).status).toBe(200);
    expect((await ops.settle(holdId, 2_000)).status).toBe(200); // the same settlement again is a no-op
    const conflicting = await ops.settle(holdId, 1_000);
    expect(conflicting.status).toBe(409);
    expect(code(conflicting)).toBe("hold_already_resolved");
    expect((await ops.release(holdId)).status).toBe(409);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 8_000, reserved_microrub: 0 });

    const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
    const kinds = ledger.body.data.filter((e: { hold_id: string }) => e.hold_id === holdId).map((e: { kind: string }) => e.kind);
    expect(kinds.sort()).toEqual(["hold", "settle"]);
  });

  it("releases with nothing charged, the reason in the ledger, and a release is idempotent", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await ops.place(a.keyId, 2_500, holdId);
    expect((await ops.release(holdId, "upstream failed")).body.status).toBe("released");
    expect((await ops.release(holdId)).status).toBe(200);
    expect((await ops.settle(holdId, 100)).status).toBe(409);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 10_000, reserved_microrub: 0, available_microrub: 10_000 });
    const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
    expect(ledger.body.data.find((e: { hold_id: string; kind: string }) => e.hold_id === holdId && e.kind === "release")).toMatchObject({
      amount_microrub: 2_500,
      reference: "upstream failed",
    });
  });

  it("never settles more than was held", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    await ops.place(a.keyId, 1_000, holdId);
    const res = await ops.settle(holdId, 1_001);
    expect(res.status).toBe(422);
    expect(code(res)).toBe("settle_exceeds_hold");
    expect((await balance(a.organizationId)).reserved_microrub).toBe(1_000);
    expect((await ops.settle(holdId, 1_000)).status).toBe(200);
  });

  it("a release that arrives before its placement makes the late placement place nothing", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    const released = await ops.release(holdId, "caller gave up", a.organizationId);
    expect(released.body).toMatchObject({ status: "released", amount_microrub: 0, organization_id: a.organizationId, key_id: null });
    const late = await ops.place(a.keyId, 3_000, holdId);
    expect(late).toMatchObject({ status: 200, body: { status: "released" } });
    expect((await balance(a.organizationId)).reserved_microrub).toBe(0);
  });

  it("keeps no record of a release of an unknown id that names no organization: a later placement of it places", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const holdId = randomUUID();
    expect((await ops.release(holdId, "caller gave up")).status).toBe(404);
    // Nor under an organization billing does not have.
    expect((await ops.release(holdId, "caller gave up", randomUUID())).status).toBe(404);
    expect(await ops.place(a.keyId, 3_000, holdId)).toMatchObject({ status: 200, body: { status: "active" } });
    expect((await balance(a.organizationId)).reserved_microrub).toBe(3_000);
  });

  it("refuses a hold the balance or the daily budget cannot cover, reserving nothing", async () => {
    const poor = await seedAccount(h, { credit: 1_000 });
    const r1 = await ops.place(poor.keyId, 1_001);
    expect([r1.status, code(r1)]).toEqual([402, "insufficient_balance"]);

    const capped = await seedAccount(h, { credit: 1_000_000, dailyBudget: 5_000 });
    expect((await ops.place(capped.keyId, 5_000)).status).toBe(200);
    const r2 = await ops.place(capped.keyId, 1);
    expect([r2.status, code(r2)]).toEqual([429, "daily_budget_exceeded"]);
    expect((await balance(capped.organizationId)).reserved_microrub).toBe(5_000);
  });

  it("refuses holds for a revoked key", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    await h.call("POST", `/admin/v1/keys/${a.keyId}/revoke`).expect(200);
    const res = await ops.place(a.keyId, 10);
    expect([res.status, code(res)]).toEqual([401, "invalid_api_key"]);
  });

  it("settles unknown holds never", async () => {
    const res = await ops.settle(randomUUID(), 1);
    expect([res.status, code(res)]).toEqual([404, "not_found"]);
  });

  it("applies a batch as it came, in one transaction, each op succeeding or failing on its own", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const settled = randomUUID();
    await ops.place(a.keyId, 1_000, settled);
    const fresh = randomUUID();
    const before = await transactions();
    const res = await h
      .call("POST", BillingEndpoints.holdOps.path, SERVICE, {
        ops: [
          placeOp(a.keyId, 2_000, fresh),
          placeOp(a.keyId, 1_000_000),
          { op: "settle", hold_id: settled, amount_microrub: 700 },
          { op: "settle", hold_id: randomUUID(), amount_microrub: 1 },
          { op: "release", hold_id: fresh, reason: "changed my mind" },
        ],
      })
      .expect(200);
    expect(await transactions()).toBe(before + 1);
    // Each op answers with the hold as that op left it, not as the batch did.
    expect(res.body.results.map((r: { ok: boolean; hold?: { status: string }; error?: { code: string } }) => (r.ok ? r.hold!.status : r.error!.code))).toEqual([
      "active",
      "insufficient_balance",
      "settled",
      "not_found",
      "released",
    ]);
    expect(await balance(a.organizationId)).toMatchObject({ balance_microrub: 9_300, reserved_microrub: 0 });
  });

  it("refuses a placement without its owner", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    const { owner_ref: _owner, ...ownerless } = placeOp(a.keyId, 10);
    const res = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [ownerless] }).expect(400);
    expect(res.body.error.code).toBe("invalid_request");
    await expect(
      h.db
        .$executeRaw`INSERT INTO holds (id, organization_id, key_id, amount, status) VALUES (${randomUUID()}::uuid, ${a.organizationId}::uuid, ${a.keyId}::uuid, 1, 'active')`,
    ).rejects.toThrow(/holds_active_has_owner/);
  });

  it("accepts only signed holder services on the hold operations", async () => {
    await h.call("POST", BillingEndpoints.holdOps.path, { kind: "admin" }, { ops: [] }).expect(403);
    await h.call("POST", BillingEndpoints.holdOps.path, { kind: "service", service: "files" }, { ops: [] }).expect(403);
  });
});

const transactions = () => counterValue(h.metrics, "billing_hold_transactions_total");

describe("a later release's functions under this release's prepared statements", () => {
  it("keeps applying batches once apply_hold_ops returns one more column (its migration Job runs while these pods do)", async () => {
    const a = await seedAccount(h, { credit: 10_000 });
    // Sequential calls run on the pool's same connection, which prepares the statement.
    for (let i = 0; i < 3; i++) expect((await ops.place(a.keyId, 1_000)).status).toBe(200);
    const text = readFileSync(path.join(SERVICE_DIR, "prisma", "sql", "apply_hold_ops.sql"), "utf8");
    const later = text
      .replaceAll("usable_until timestamptz, retry_after boolean\n)", "usable_until timestamptz, retry_after boolean, later_column integer\n)")
      .replace("         a.retry_after\n  FROM parts p", "         a.retry_after, a.later_column\n  FROM parts p");
    expect(later).not.toBe(text);
    const drop =
      "DROP FUNCTION apply_hold_ops(jsonb, text, integer, numeric, timestamptz); DROP FUNCTION apply_hold_ops(uuid, jsonb, text, integer, numeric, timestamptz);";
    const admin = new pg.Client({ connectionString: h.url });
    await admin.connect();
    try {
      await admin.query(`BEGIN; ${drop} ${later} COMMIT;`);
      expect((await ops.place(a.keyId, 1_000)).status).toBe(200);
      expect(await balance(a.organizationId)).toMatchObject({ reserved_microrub: 4_000 });
    } finally {
      await admin.query(`BEGIN; ${drop} ${text} COMMIT;`);
      await admin.end();
    }
  });
});
