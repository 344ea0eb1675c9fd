import { randomUUID } from "node:crypto";
import { createLogger, Metrics } from "@meter/service-kit";
import { BillingEndpoints, type AllowanceSpend, type HoldOp, type Identity, type RefusalRecord } from "@meter/contracts";
import { HoldExpiryService } from "../src/holds/hold-expiry.service";
import type { LedgerOp } from "../src/holds/hold-ops.repository";
import { moneyPathFindings, recordsMoneyPath, type MoneyPathFindings } from "@meter/testing";
import { GlobalJob, inGlobalJob } from "../src/global-jobs";
import { placeOp, SERVICE, seedAccount, startBilling, type BillingHarness } from "./support/billing-harness";

/**
 * The money path is one organization per transaction (docs/scale.md), as Citus runs a transaction on
 * one shard. This suite is one of @meter/testing's MONEY_PATH_SUITES: its billing database records
 * (transaction id, organization, session) of every row written to a table distributed by organization,
 * and billing runs with HOLD_BATCH_TRANSACTIONS=organization, as on Citus. Billing takes mixed batches
 * from many organizations the ways its holders send them (placements, grants, requests on allowances,
 * closes, settlements, releases, a tombstone, an unknown hold, a replay), its expiry sweep frees a hold,
 * an operator credits and the gateway's refusals arrive; then no transaction of billing's may have
 * written two organizations' rows (`npm test`'s money path check asserts the same of every money suite).
 */
const GATEWAY: Identity = { kind: "service", service: "gateway" };

let h: BillingHarness;
beforeAll(async () => {
  expect(recordsMoneyPath()).toBe(true);
  h = await startBilling();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await h.close();
});

/** billing's transactions that wrote rows of more than one organization, as `npm test` checks them. */
async function crossOrganization(): Promise<MoneyPathFindings["crossing"]> {
  return (await moneyPathFindings(h.url))!.crossing;
}

const spendOf = (allowanceId: string, keyId: string, estimate: number): AllowanceSpend => ({
  allowance_id: allowanceId,
  key_id: keyId,
  reserved_microrub: estimate,
  operation: "text",
  model: "m",
  owner_ref: `req-${randomUUID()}`,
});

it("writes one organization per transaction, whatever the batches mix", async () => {
  const accounts = await Promise.all(Array.from({ length: 6 }, () => seedAccount(h, { credit: 10_000_000 })));
  // The seeding itself (users, organizations, credits, keys) is one organization per transaction too.
  expect(await crossOrganization()).toEqual([]);
  const apply = async (ops: LedgerOp[]) => {
    const results = await h.services.holds.apply(ops);
    for (const r of results) expect(r).not.toBeInstanceOf(Error);
    return results;
  };

  // Placements and grants of every organization in one batch, interleaved.
  const places = accounts.flatMap((a) => [placeOp(a.keyId, 1_000), placeOp(a.keyId, 2_000)]);
  const grants = accounts.map((a) => ({
    op: "grant" as const,
    hold_id: randomUUID(),
    key_id: a.keyId,
    amount_microrub: 100_000,
    min_microrub: 1_000,
    unit_microrub: 1_000,
    operation: "text" as const,
    source: "text" as const,
    owner_ref: `allowance-${randomUUID()}`,
  }));
  const first = await apply([...places, ...grants].sort(() => Math.random() - 0.5));
  expect(first.filter((r) => !(r instanceof Error) && (r.outcome === "placed" || r.outcome === "granted"))).toHaveLength(places.length + grants.length);

  // Requests on the allowances (settled and released), settlements, releases, a tombstone of an id
  // never placed (named with its organization), an unknown hold and replays: one batch, as the bus
  // consumer hands it over.
  const spends = accounts.flatMap((a, i) => [
    {
      op: "settle" as const,
      hold_id: randomUUID(),
      organization_id: a.organizationId,
      amount_microrub: 700,
      source: "text" as const,
      allowance: spendOf(grants[i]!.hold_id, a.keyId, 1_000),
    },
    {
      op: "release" as const,
      hold_id: randomUUID(),
      reason: "upstream failed",
      source: "text" as const,
      allowance: spendOf(grants[i]!.hold_id, a.keyId, 1_000),
    },
  ]);
  const resolutions = places.map((p, i) =>
    i % 2 === 0
      ? { op: "settle" as const, hold_id: p.hold_id, amount_microrub: 500, source: "text" as const }
      : {
          op: "release" as const,
          hold_id: p.hold_id,
          organization_id: accounts[Math.floor(i / 2)]!.organizationId,
          reason: "cancelled",
          source: "text" as const,
        },
  );
  const odd: LedgerOp[] = [
    { op: "release", hold_id: randomUUID(), organization_id: accounts[0]!.organizationId, reason: "gave up", source: "text" },
    { op: "settle", hold_id: randomUUID(), amount_microrub: 1, source: "text" },
  ];
  const second = await apply([...spends, ...resolutions, ...odd].sort(() => Math.random() - 0.5));
  expect(second.filter((r) => !(r instanceof Error) && ["settled", "released", "released_unplaced"].includes(r.outcome))).toHaveLength(
    spends.length + resolutions.length + 1,
  );
  await apply([...resolutions]);

  // The allowances closed with what their requests used, over HTTP as a holder whose bus is down sends them.
  const closes: HoldOp[] = accounts.map((a, i) => ({
    op: "release",
    hold_id: grants[i]!.hold_id,
    organization_id: a.organizationId,
    reason: "idle",
    used_microrub: 2_000,
  }));
  const closed = await h.call("POST", BillingEndpoints.holdOps.path, SERVICE, { ops: closes }).expect(200);
  expect(closed.body.results.every((r: { ok: boolean }) => r.ok)).toBe(true);

  // Holds nobody resolved, of every organization, freed by the expiry sweep in one pass.
  const stale = accounts.map((a) => placeOp(a.keyId, 3_000));
  await apply(stale);
  // The test's own back-dating, of every organization at once, is a fixture: not billing's write.
  await h.db.$executeRaw`UPDATE holds SET created_at = now() - interval '73 hours' WHERE id = ANY (${stale.map((s) => s.hold_id)}::uuid[])`;
  const metrics = new Metrics("billing-ledger");
  const expired = metrics.counter("billing_holds_expired_total", "expired", ["source"]);
  const sweeper = new HoldExpiryService(h.services.holdReads, h.services.holds, 72, createLogger("money-path-test", "silent"), expired);
  expect(await sweeper.sweep()).toBe(stale.length);

  // The gateway's refusals of every organization's keys in one call.
  const now = new Date().toISOString();
  const refusals: RefusalRecord[] = accounts.map((a) => ({
    key_id: a.keyId,
    endpoint: "/v1/messages",
    model: "m",
    status: 429,
    code: "rate_limited",
    message: "slow down",
    count: 2,
    first_at: now,
    last_at: now,
    request_id: null,
  }));
  await h.call("POST", BillingEndpoints.recordRefusals.path, GATEWAY, { refusals }).expect(200);

  const written = await h.db.$queryRaw<{ tbl: string }[]>`SELECT DISTINCT tbl FROM test_txn_writes WHERE application_name = 'billing-ledger' ORDER BY tbl`;
  expect(written.map((w) => w.tbl)).toEqual(
    expect.arrayContaining(["holds", "ledger_entries", "organizations", "api_keys", "key_daily_usage", "credits", "request_log"]),
  );
  expect(await crossOrganization()).toEqual([]);
});

it("counts a transaction of billing's connections that writes two organizations, not a test's own or a global job's", async () => {
  const [a, b] = await Promise.all([seedAccount(h, { credit: 1_000 }), seedAccount(h, { credit: 1_000 })]);
  const both = [a.organizationId, b.organizationId];
  const touchBoth = (db: typeof h.db) => db.$executeRaw`UPDATE organizations SET name = name WHERE id = ANY (${both}::uuid[])`;
  await touchBoth(h.db);
  await inGlobalJob(h.database.pool, GlobalJob.requestLogRollup, (c) => c.query("UPDATE organizations SET name = name WHERE id = ANY ($1::uuid[])", [both]));
  const before = (await moneyPathFindings(h.url))!;
  expect(before.crossing).toEqual([]);
  expect(before.globalJobs).toEqual([{ session: GlobalJob.requestLogRollup, transactions: 1 }]);

  await touchBoth(h.database.prisma);
  const crossing = await crossOrganization();
  expect(crossing).toEqual([
    { txid: expect.any(String), organizations: expect.arrayContaining(both), tables: ["organizations"], sessions: ["billing-ledger"] },
  ]);
  // None of these is billing's code: their records go, so `npm test`'s money path check finds only billing's.
  await h.db.$executeRaw`DELETE FROM test_txn_writes WHERE organization_id = ANY (${both}::uuid[]) AND tbl = 'organizations' AND op = 'UPDATE'`;
});
