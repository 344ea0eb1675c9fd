import { Client } from "pg";
import { BillingEndpoints } from "@meter/contracts";
import { AppError, Metrics } from "@meter/service-kit";
import { createBillingServices, type BillingServices } from "../src/composition";
import { createDatabase, type BillingDatabase as Database } from "../src/db";
import type { LedgerOp } from "../src/holds/hold-ops.repository";
import { counterValue, placeOp, SERVICE, seedAccount, startBilling, testGrants, type BillingHarness } from "./support/billing-harness";

/**
 * Hold batches lock organizations, then keys, each in id order, wait for a lock at most
 * HOLD_LOCK_TIMEOUT_MS, and run several at a time: opposite orders never deadlock, and one
 * organization's lock stalls nobody else.
 */
const LOCK_TIMEOUT_MS = 300;

let h: BillingHarness;
beforeAll(async () => {
  h = await startBilling({ lockTimeoutMs: LOCK_TIMEOUT_MS, holdAttempts: 2 });
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

it("two replicas' batches touching organizations in opposite orders never deadlock", async () => {
  // Two replicas, each its own pool, that do not retry: a deadlock would show as a failed transaction.
  const replicas: { database: Database; services: BillingServices; metrics: Metrics }[] = [0, 1].map(() => {
    const database = createDatabase(h.url, 4);
    const metrics = new Metrics("billing-ledger");
    return { database, metrics, services: createBillingServices(database, { timezone: "UTC", metrics, holdAttempts: 1, grants: testGrants() }) };
  });
  try {
    const accounts = await Promise.all(Array.from({ length: 8 }, () => seedAccount(h, { credit: 100_000_000 })));
    const rounds = 25;
    for (let round = 0; round < rounds; round++) {
      const forward: LedgerOp[] = accounts.flatMap((a) => [placeOp(a.keyId, 10), placeOp(a.keyId, 10)]);
      const backward: LedgerOp[] = [...accounts].reverse().flatMap((a) => [placeOp(a.keyId, 10), placeOp(a.keyId, 10)]);
      const [one, two] = await Promise.all([replicas[0]!.services.holds.apply(forward), replicas[1]!.services.holds.apply(backward)]);
      for (const r of [...one, ...two]) expect(r).toMatchObject({ outcome: "placed" });
    }
    for (const r of replicas) {
      expect(await counterValue(r.metrics, "billing_hold_transaction_failures_total")).toBe(0);
      // One transaction per batch: none had to be split up op by op.
      expect(await counterValue(r.metrics, "billing_hold_transactions_total")).toBe(rounds);
    }
  } finally {
    await Promise.all(replicas.map((r) => r.database.close()));
  }
});

it("a database out of connections answers a retriable 503 and reserves nothing", async () => {
  // A role allowed no connection: PostgreSQL refuses it with 53300, as when max_connections is reached.
  const role = `t_noconn_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: h.url });
  await admin.connect();
  await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
  const url = new URL(h.url);
  url.username = role;
  url.password = "";
  const database = createDatabase(url.toString(), 2);
  const metrics = new Metrics("billing-ledger");
  try {
    const account = await seedAccount(h, { credit: 100_000 });
    const services = createBillingServices(database, { timezone: "UTC", metrics, holdAttempts: 3, grants: testGrants() });
    const error = await services.holds.place(placeOp(account.keyId, 100)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "service_unavailable", status: 503, headers: { "retry-after": "1" } });
    // Not run again: a database short of connections is not helped by more attempts.
    expect(await counterValue(metrics, "billing_hold_transaction_failures_total", { reason: "unavailable" })).toBe(1);
    const balance = await h.call("GET", `/admin/v1/organizations/${account.organizationId}/balance`).expect(200);
    expect(balance.body.reserved_microrub).toBe(0);
  } finally {
    await database.close();
    await admin.query(`DROP ROLE ${role}`);
    await admin.end();
  }
});

describe("while one organization's row is locked", () => {
  let locker: Client;
  beforeEach(async () => {
    locker = new Client({ connectionString: h.url });
    await locker.connect();
  });
  afterEach(async () => {
    await locker.query("ROLLBACK");
    await locker.end();
  });

  it("other organizations' holds complete, and the locked one fails after the lock timeout with a retriable error", async () => {
    const locked = await seedAccount(h, { credit: 100_000 });
    const others = await Promise.all(Array.from({ length: 10 }, () => seedAccount(h, { credit: 100_000 })));
    await locker.query("BEGIN");
    await locker.query("SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE", [locked.organizationId]);

    const started = Date.now();
    let stuckSettled = false;
    const stuck = h.services.holds.place(placeOp(locked.keyId, 100)).then(
      () => undefined,
      (e: unknown) => e,
    );
    void stuck.finally(() => (stuckSettled = true));
    const placed = await Promise.all(others.map((a) => h.services.holds.place(placeOp(a.keyId, 100))));
    expect(placed.map((x) => x.status)).toEqual(others.map(() => "active"));
    expect(stuckSettled).toBe(false);

    const error = await stuck;
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "service_unavailable", status: 503, headers: { "retry-after": "1" } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * LOCK_TIMEOUT_MS);
    expect(await counterValue(h.metrics, "billing_hold_transaction_failures_total", { reason: "lock_timeout" })).toBeGreaterThanOrEqual(2);
    const balance = await h.call("GET", `/admin/v1/organizations/${locked.organizationId}/balance`).expect(200);
    expect(balance.body.reserved_microrub).toBe(0);
  });

  it("a batch mixing the locked organization with others answers the others and refuses only the locked op", async () => {
    const locked = await seedAccount(h, { credit: 100_000 });
    const free = await seedAccount(h, { credit: 100_000 });
    await locker.query("BEGIN");
    await locker.query("SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE", [locked.organizationId]);

    const res = await h
      .call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: [placeOp(free.keyId, 100), placeOp(locked.keyId, 100), placeOp(free.keyId, 200)] })
      .expect(200);
    expect(res.body.results.map((r: { ok: boolean; hold?: { status: string }; error?: { code: string } }) => (r.ok ? r.hold!.status : r.error!.code))).toEqual([
      "active",
      "service_unavailable",
      "active",
    ]);
  });
});
