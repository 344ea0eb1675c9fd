import { randomUUID } from "node:crypto";
import type { AllowanceSpend } from "@meter/contracts";
import type { LedgerOp } from "../src/holds/hold-ops.repository";
import { Metrics } from "@meter/service-kit";
import { createBillingServices, type BillingServices } from "../src/composition";
import { createDatabase, type BillingDatabase as Database } from "../src/db";
import { seedAccount, startBilling, testGrants, suiteHoldBatchTransactions, type BillingHarness } from "./support/billing-harness";

/**
 * A batch's plain requests on allowances are applied together (prisma/sql/allowance_spend_batch.sql),
 * the rest op by op. Whatever a batch holds, it must end exactly where the same ops one at a time end:
 * the same outcomes, balances, reservations, budget-day spend and allowances' `consumed`, and, where every
 * request of an organization went together, the same ledger entries with the same running figures.
 * Production takes that pass from 8 such requests of one organization on (`meter.allowance_batch_min`);
 * here from the first, through a pool whose sessions start with the database's setting of 1.
 */
let h: BillingHarness;
let holds: BillingServices["holds"];
let database: Database;
beforeAll(async () => {
  h = await startBilling();
  const name = new URL(h.url).pathname.slice(1);
  await h.db.$executeRawUnsafe(`ALTER DATABASE "${name}" SET meter.allowance_batch_min = 1`);
  database = createDatabase(h.url, 4);
  holds = createBillingServices(database, {
    timezone: "UTC",
    metrics: new Metrics("billing-ledger"),
    grants: testGrants(),
    holdBatchTransactions: suiteHoldBatchTransactions(),
  }).holds;
});
afterAll(async () => {
  await database.close();
  await h.assertBooksBalance();
  await h.close();
});

interface World {
  orgs: string[];
  keys: string[];
  allowances: string[];
}

/** Two organizations, each with one key and two allowances (10,000 and 8,000). */
async function world(): Promise<World> {
  const w: World = { orgs: [], keys: [], allowances: [] };
  for (let i = 0; i < 2; i++) {
    const a = await seedAccount(h, { credit: 1_000_000 });
    w.orgs.push(a.organizationId);
    w.keys.push(a.keyId);
    for (const amount of [10_000, 8_000]) {
      const id = randomUUID();
      const [r] = await h.services.holds.apply([
        { op: "grant", hold_id: id, key_id: a.keyId, amount_microrub: amount, min_microrub: 1_000, operation: "text", source: "text", owner_ref: `a-${id}` },
      ]);
      expect(r).toMatchObject({ outcome: "granted" });
      w.allowances.push(id);
    }
  }
  return w;
}

/** A script of ops over a world, by index: requests are named by label so two worlds can run it. */
type Step =
  | {
      settle: string;
      on: number;
      estimate: number;
      cost: number;
      source?: "text" | "media-jobs";
      /** The allowance id as sent: in capitals (a uuid all the same), or another request's id. */
      allowanceAs?: "upper" | { request: string };
    }
  | { release: string; on: number; estimate: number }
  | { close: number; used: number }
  | { place: string; key: number; amount: number };

function opsOf(script: Step[], w: World, ids: Map<string, string>): LedgerOp[] {
  const id = (label: string) => ids.get(label) ?? ids.set(label, randomUUID()).get(label)!;
  const keyOf = (allowance: number) => w.keys[Math.floor(allowance / 2)]!;
  const spend = (label: string, on: number, estimate: number, as?: "upper" | { request: string }): AllowanceSpend => ({
    allowance_id: as === undefined ? w.allowances[on]! : as === "upper" ? w.allowances[on]!.toUpperCase() : id(as.request),
    key_id: keyOf(on),
    reserved_microrub: estimate,
    operation: "text",
    model: "m",
    owner_ref: `req-${label}`,
  });
  return script.map((s): LedgerOp => {
    if ("settle" in s)
      return {
        op: "settle",
        hold_id: id(s.settle),
        amount_microrub: s.cost,
        source: s.source ?? "text",
        allowance: spend(s.settle, s.on, s.estimate, s.allowanceAs),
      };
    if ("release" in s)
      return { op: "release", hold_id: id(s.release), reason: "upstream failed", source: "text", allowance: spend(s.release, s.on, s.estimate) };
    if ("close" in s) return { op: "release", hold_id: w.allowances[s.close]!, reason: "idle", used_microrub: s.used, source: "text" };
    return {
      op: "place",
      hold_id: id(s.place),
      key_id: w.keys[s.key]!,
      amount_microrub: s.amount,
      operation: "text",
      model: "m",
      source: "text",
      owner_ref: `p-${s.place}`,
    };
  });
}

/** What a world ends with, ids replaced by their place in it. */
async function stateOf(w: World, ids: Map<string, string>) {
  const label = new Map<string, string>([...ids].map(([l, id]) => [id, l]));
  w.allowances.forEach((id, i) => label.set(id, `allowance${i}`));
  const rows = async (sql: string, params: unknown[]) => (await h.db.$queryRawUnsafe(sql, ...params)) as Record<string, unknown>[];
  const orgs = await rows("SELECT balance, reserved FROM organizations WHERE id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], id)", [w.orgs]);
  const keys = await rows(
    `SELECT k.reserved, coalesce((SELECT sum(u.spent) FROM key_daily_usage u WHERE u.key_id = k.id), 0) AS spent
     FROM api_keys k WHERE k.id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], k.id)`,
    [w.keys],
  );
  const holds = await rows("SELECT id, status, amount, settled, consumed, allowance_id FROM holds WHERE organization_id = ANY($1::uuid[])", [w.orgs]);
  const entries = await rows(
    `SELECT organization_id, hold_id, kind, amount, balance_after, reserved_after, reference FROM ledger_entries
     WHERE organization_id = ANY($1::uuid[]) AND kind <> 'credit' ORDER BY id`,
    [w.orgs],
  );
  const named = (id: unknown) => label.get(String(id)) ?? String(id);
  return {
    orgs: orgs.map((o) => [String(o.balance), String(o.reserved)]),
    keys: keys.map((k) => [String(k.reserved), String(k.spent)]),
    holds: holds
      .map((x) => [named(x.id), x.status, String(x.amount), String(x.settled), String(x.consumed), x.allowance_id ? named(x.allowance_id) : null])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    entriesByOrg: w.orgs.map((org) =>
      entries
        .filter((e) => e.organization_id === org)
        .map((e) => [named(e.hold_id), e.kind, String(e.amount), String(e.balance_after), String(e.reserved_after), e.reference]),
    ),
  };
}

/** Runs the script in a fresh world, as one batch or op by op. */
async function run(script: Step[], batched: boolean) {
  const w = await world();
  const ids = new Map<string, string>();
  const ops = opsOf(script, w, ids);
  const results = [];
  if (batched) results.push(...(await holds.apply(ops)));
  else for (const o of ops) results.push((await holds.apply([o]))[0]!);
  const outcomes = results.map((r) => (r instanceof Error ? r.message : r.outcome));
  return { outcomes, state: await stateOf(w, ids) };
}

const bothWays = async (script: Step[]) => ({ batched: await run(script, true), oneByOne: await run(script, false) });

describe("a batch of requests on allowances", () => {
  it("ends exactly as its ops one at a time do, ledger entries and running figures included", async () => {
    const script: Step[] = [
      { settle: "r1", on: 0, estimate: 3_000, cost: 2_500 },
      { release: "r2", on: 0, estimate: 2_000 },
      { settle: "r3", on: 2, estimate: 4_000, cost: 4_000 },
      { settle: "r4", on: 1, estimate: 8_000, cost: 0 },
      { settle: "r5", on: 0, estimate: 5_000, cost: 1 },
      { settle: "r6", on: 3, estimate: 1_000, cost: 999 },
    ];
    const { batched, oneByOne } = await bothWays(script);
    expect(batched.outcomes).toEqual(["settled", "released", "settled", "settled", "settled", "settled"]);
    expect(batched).toEqual(oneByOne);
  });

  it("leaves to the per-op rules what they decide: replays, overflows, closes, foreign and mixed ops", async () => {
    const script: Step[] = [
      { place: "p1", key: 0, amount: 50_000 },
      { settle: "r1", on: 0, estimate: 3_000, cost: 2_500 },
      // The same request twice: the second is a replay.
      { settle: "r1", on: 0, estimate: 3_000, cost: 2_500 },
      // Allowance 1 cannot hold both: the first fits, the second is refused.
      { settle: "r2", on: 1, estimate: 6_000, cost: 6_000 },
      { settle: "r3", on: 1, estimate: 3_000, cost: 3_000 },
      // Allowance 2 is closed in the same batch, after one of its requests and before another.
      { settle: "r4", on: 2, estimate: 2_000, cost: 1_000 },
      { close: 2, used: 3_000 },
      { release: "r5", on: 2, estimate: 1_000 },
      // Another service's command on a text allowance moves nothing.
      { settle: "r6", on: 3, estimate: 1_000, cost: 1_000, source: "media-jobs" },
      // A cost over the estimate.
      { settle: "r7", on: 3, estimate: 1_000, cost: 1_001 },
      { settle: "r8", on: 3, estimate: 2_000, cost: 2_000 },
      { place: "p2", key: 1, amount: 900_000 },
    ];
    const { batched, oneByOne } = await bothWays(script);
    expect(batched.outcomes).toEqual(oneByOne.outcomes);
    expect(oneByOne.outcomes).toEqual([
      "placed",
      "settled",
      "already",
      "settled",
      "conflict",
      "settled",
      "closing",
      "released",
      "foreign",
      "exceeds_hold",
      "settled",
      "placed",
    ]);
    // Taken first, the batch's plain requests write their entries before their neighbours': the final
    // figures are the same, the order of some entries is not.
    const { entriesByOrg: batchedEntries, ...batchedRest } = batched.state;
    const { entriesByOrg: oneByOneEntries, ...oneByOneRest } = oneByOne.state;
    expect(batchedRest).toEqual(oneByOneRest);
    const sorted = (e: unknown[][][]) =>
      e.map((org) => [...org].sort((a, b) => `${a[0]}${a[1]}`.localeCompare(`${b[0]}${b[1]}`)).map((x) => [x[0], x[1], x[2], x[5]]));
    expect(sorted(batchedEntries)).toEqual(sorted(oneByOneEntries));
    await h.assertBooksBalance();
  });

  it("leaves a request to the per-op rules where taking it first would change a neighbour's outcome", async () => {
    // Organization 0 has 982,000 available (18,000 in its allowances): the placement does not fit
    // until the release after it frees 3,000, so it is refused, as one at a time.
    const script: Step[] = [
      { place: "p1", key: 0, amount: 984_000 },
      { release: "r1", on: 0, estimate: 3_000 },
      // The same allowance in capitals: one allowance, whose two requests do not both fit.
      { settle: "r2", on: 2, estimate: 6_000, cost: 6_000 },
      { settle: "r2", on: 2, estimate: 6_000, cost: 6_000 },
      { settle: "r3", on: 2, estimate: 6_000, cost: 1_000, allowanceAs: "upper" },
      // A request naming as its allowance a request of the same batch: no allowance of that id.
      { settle: "r4", on: 3, estimate: 1_000, cost: 1_000, allowanceAs: { request: "r5" } },
      { settle: "r5", on: 3, estimate: 1_000, cost: 1_000 },
    ];
    const { batched, oneByOne } = await bothWays(script);
    expect(oneByOne.outcomes).toEqual(["insufficient_balance", "released", "settled", "already", "conflict", "not_found", "settled"]);
    expect(batched.outcomes).toEqual(oneByOne.outcomes);
    expect(batched.state).toEqual(oneByOne.state);
  });
});
