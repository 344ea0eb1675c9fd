import { createDatabase, type BillingDatabase as Database } from "../src/db";
import { createBillingServices, type BillingServices } from "../src/composition";
import { Metrics } from "@meter/service-kit";
import { placeOp, seedAccount, startBilling, testGrants, suiteHoldBatchTransactions, type BillingHarness } from "./support/billing-harness";

/**
 * Bursts of concurrent holds must never overrun a budget or a balance. Four independent service
 * instances (own connection pool, own batcher) stand in for four replicas, so the holds really race
 * each other inside PostgreSQL rather than queueing in one process.
 */
let h: BillingHarness;
let replicas: { database: Database; services: BillingServices }[];

beforeAll(async () => {
  h = await startBilling();
  replicas = Array.from({ length: 4 }, () => {
    const database = createDatabase(h.url, 8);
    return {
      database,
      services: createBillingServices(database, {
        timezone: "UTC",
        metrics: new Metrics("billing-ledger"),
        grants: testGrants(),
        holdBatchTransactions: suiteHoldBatchTransactions(),
      }),
    };
  });
});
afterAll(async () => {
  await h.assertBooksBalance();
  await Promise.all(replicas.map((r) => r.database.close()));
  await h.close();
});

async function burst(keyId: string, count: number, amount: number) {
  return Promise.allSettled(Array.from({ length: count }, (_, i) => replicas[i % replicas.length]!.services.holds.place(placeOp(keyId, amount))));
}

function codes(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const code = r.status === "fulfilled" ? "placed" : ((r.reason as { code?: string }).code ?? String(r.reason));
    out[code] = (out[code] ?? 0) + 1;
  }
  return out;
}

it("64 concurrent holds against a daily budget that admits exactly 17: 17 succeed, 47 get daily_budget_exceeded", async () => {
  const a = await seedAccount(h, { credit: 1_000_000_000, dailyBudget: 17 * 1_000 + 999 });
  const results = await burst(a.keyId, 64, 1_000);
  expect(codes(results)).toEqual({ placed: 17, daily_budget_exceeded: 47 });
  const usage = await h.call("GET", `/admin/v1/keys/${a.keyId}/usage`).expect(200);
  expect(usage.body.reserved_microrub).toBe(17_000);
});

it("64 concurrent holds against a balance that admits exactly 23: 23 succeed, 41 get insufficient_balance", async () => {
  const a = await seedAccount(h, { credit: 23 * 5_000 + 4_999, dailyBudget: 1_000_000_000 });
  const results = await burst(a.keyId, 64, 5_000);
  expect(codes(results)).toEqual({ placed: 23, insufficient_balance: 41 });
  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ reserved_microrub: 115_000, available_microrub: 4_999 });
});

it("keys of one organization share its balance under concurrency", async () => {
  const a = await seedAccount(h, { credit: 10 * 1_000 });
  const second = await h
    .call(
      "POST",
      "/admin/v1/keys",
      { kind: "admin" },
      { user_id: a.userId, organization_id: a.organizationId, scopes: ["text"], daily_budget_microrub: 1_000_000 },
    )
    .expect(201);
  const results = (await Promise.all([burst(a.keyId, 32, 1_000), burst(second.body.id, 32, 1_000)])).flat();
  expect(codes(results)).toEqual({ placed: 10, insufficient_balance: 54 });
});

it("concurrent settlements and releases of the same holds resolve each exactly once", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const placed = await Promise.all(Array.from({ length: 20 }, () => replicas[0]!.services.holds.place(placeOp(a.keyId, 1_000))));
  const attempts = placed.flatMap((hold, i) =>
    replicas.map((r, j) => ((i + j) % 2 === 0 ? r.services.holds.settle(hold.hold_id, 600) : r.services.holds.release(hold.hold_id, "race"))),
  );
  await Promise.allSettled(attempts);
  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body.reserved_microrub).toBe(0);
  const holds = await Promise.all(placed.map((hold) => h.services.holdReads.find(hold.hold_id)));
  const settledCount = holds.filter((x) => x?.status === "settled").length;
  expect(balance.body.balance_microrub).toBe(1_000_000 - settledCount * 600);
});
