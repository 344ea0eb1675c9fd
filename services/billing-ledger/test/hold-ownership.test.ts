import { randomUUID } from "node:crypto";
import { BillingEndpoints, type Deployable, type HoldOp, type HoldOpResult, type HoldOpsResponse, type HoldSource, type Operation } from "@meter/contracts";
import { connectBus, MessageHeaders, type Bus, type Consumer } from "@meter/messaging";
import { createLogger } from "@meter/service-kit";
import { createTestVhost, drainQueue, testKeys, type TestVhost } from "@meter/testing";
import type { Counter } from "prom-client";
import { startHoldCommandConsumer } from "../src/holds/hold-commands.consumer";
import { counterValue, seedAccount, startBilling, until, type BillingHarness } from "./support/billing-harness";

/**
 * Holds belong to their source (docs/api.md, "Internal calls"): a holder settles, releases or closes
 * only the holds and allowances its own service placed, and places them in its own name only, over
 * HTTP and over the bus alike. media-jobs' worker acts for media-jobs.
 */
let h: BillingHarness;
let vhost: TestVhost;
let consumer: Consumer;
const buses = new Map<Deployable, Bus>();
beforeAll(async () => {
  h = await startBilling();
  vhost = await createTestVhost();
  // A vhost of the test's own, whose topology the test declares as billing-ledger would.
  for (const d of ["text", "media-jobs", "media-jobs-worker"] as const) {
    buses.set(d, await connectBus({ url: vhost.url, name: `${d}-test`, topology: "declare", keys: testKeys(d) }));
  }
  // The consumer declares the command queue before anything is published to it.
  const outcomes = h.metrics.registry.getSingleMetric("billing_hold_commands_total") as Counter<"outcome">;
  consumer = await startHoldCommandConsumer(busOf("text"), h.services.holds, createLogger("hold-ownership-test", "silent"), outcomes);
});
afterAll(async () => {
  await h.assertBooksBalance();
  await consumer.stop();
  for (const bus of buses.values()) await bus.close();
  await vhost.drop();
  await h.close();
});

const SOURCE: Record<string, HoldSource> = { text: "text", "media-jobs": "media-jobs", "media-jobs-worker": "media-jobs" };
const OPERATION: Record<HoldSource, Operation> = { text: "text", "media-jobs": "image_edit", mcp: "text", files: "text" };
const DLQ = "billing-ledger.hold-commands.dlq";

function busOf(d: Deployable): Bus {
  const bus = buses.get(d);
  if (!bus) throw new Error(`no bus for ${d}`);
  return bus;
}

/** A batch of `POST /internal/v1/hold-ops`, signed as `signer`. */
async function holdOps(signer: Deployable, ops: HoldOp[]): Promise<HoldOpResult[]> {
  const res = await h.call("POST", BillingEndpoints.holdOps.path, { kind: "service", service: signer }, { ops }).expect(200);
  return (res.body as HoldOpsResponse).results;
}

const place = (keyId: string, source: HoldSource, holdId = randomUUID(), amount = 10_000): HoldOp => ({
  op: "place",
  hold_id: holdId,
  key_id: keyId,
  amount_microrub: amount,
  operation: OPERATION[source],
  model: "m",
  source,
  owner_ref: `rec-${holdId}`,
});
const grant = (keyId: string, source: HoldSource, holdId = randomUUID()): HoldOp => ({
  op: "grant",
  hold_id: holdId,
  key_id: keyId,
  amount_microrub: 40_000,
  min_microrub: 1_000,
  operation: OPERATION[source],
  source,
  owner_ref: `al-${holdId}`,
});

/** An account with a hold and an allowance its `owner` placed over HTTP, both active. */
async function ownedBy(owner: Deployable) {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const [hold, allowance] = [randomUUID(), randomUUID()];
  const placed = await holdOps(owner, [place(a.keyId, SOURCE[owner]!, hold), grant(a.keyId, SOURCE[owner]!, allowance)]);
  expect(placed).toEqual([
    { ok: true, hold: expect.objectContaining({ status: "active", source: SOURCE[owner] }) },
    { ok: true, hold: expect.objectContaining({ status: "active", kind: "allowance", amount_microrub: 40_000 }) },
  ]);
  return { ...a, hold, allowance };
}

/** Everything a foreign op could move: the balance, the key's day, the ledger and every hold of the organization. */
async function books(a: { organizationId: string; keyId: string }) {
  return {
    balance: (await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200)).body,
    usage: (await h.call("GET", `/admin/v1/keys/${a.keyId}/usage`).expect(200)).body,
    entries: await h.db.ledgerEntry.count({ where: { organizationId: a.organizationId } }),
    holds: await h.db.hold.findMany({
      where: { organizationId: a.organizationId },
      orderBy: { id: "asc" },
      select: { id: true, status: true, settled: true, consumed: true, closingUsed: true, source: true },
    }),
  };
}

const FOREIGN_PAIRS: [actor: Deployable, owner: Deployable][] = [
  ["text", "media-jobs"],
  ["media-jobs", "text"],
  ["media-jobs-worker", "text"],
];

describe("over HTTP (POST /internal/v1/hold-ops)", () => {
  it.each(FOREIGN_PAIRS)("%s can neither resolve %s's hold or allowance nor place in its name: 409 foreign_hold, nothing moved", async (actor, owner) => {
    const a = await ownedBy(owner);
    const other = await seedAccount(h, { credit: 1_000_000 });
    const before = await books(a);
    const [placedInItsName, grantedInItsName] = [randomUUID(), randomUUID()];
    const results = await holdOps(actor, [
      { op: "settle", hold_id: a.hold, amount_microrub: 5_000 },
      { op: "release", hold_id: a.hold, reason: "not mine" },
      // Closing the allowance, and releasing it outright.
      { op: "release", hold_id: a.allowance, reason: "idle", used_microrub: 0 },
      { op: "release", hold_id: a.allowance, reason: "not mine" },
      { op: "settle", hold_id: a.allowance, amount_microrub: 1_000 },
      place(a.keyId, SOURCE[owner]!, placedInItsName),
      grant(a.keyId, SOURCE[owner]!, grantedInItsName),
      // Its own name, but the id of the owner's hold: not answered with that hold.
      place(a.keyId, SOURCE[actor]!, a.hold),
      // The caller's own placement in the same batch is applied.
      place(other.keyId, SOURCE[actor]!),
    ]);
    expect(results.slice(0, 8)).toEqual(
      Array.from({ length: 8 }, () => ({ ok: false, error: expect.objectContaining({ status: 409, code: "foreign_hold" }) })),
    );
    expect(results[8]).toMatchObject({ ok: true, hold: { status: "active", source: SOURCE[actor] } });
    expect(await books(a)).toEqual(before);
    expect(await h.services.holdReads.find(placedInItsName)).toBeUndefined();
    expect(await h.services.holdReads.find(grantedInItsName)).toBeUndefined();

    // The owner still resolves both as it decides.
    const owned = await holdOps(owner, [
      { op: "settle", hold_id: a.hold, amount_microrub: 4_000 },
      { op: "release", hold_id: a.allowance, reason: "idle", used_microrub: 0 },
    ]);
    expect(owned).toMatchObject([
      { ok: true, hold: { status: "settled", settled_microrub: 4_000 } },
      { ok: true, hold: { status: "released" } },
    ]);
    expect((await books(a)).balance).toMatchObject({ balance_microrub: 996_000, reserved_microrub: 0 });
  });

  it.each(FOREIGN_PAIRS)("%s's release of an id never placed does not take that id from %s", async (actor, owner) => {
    const a = await seedAccount(h, { credit: 1_000_000 });
    const [hold, allowance] = [randomUUID(), randomUUID()];
    // The release comes first (its tombstone), as if the actor knew the id the owner is about to use.
    const released = await holdOps(actor, [
      { op: "release", hold_id: hold, organization_id: a.organizationId, reason: "pre-empted" },
      { op: "release", hold_id: allowance, organization_id: a.organizationId, reason: "pre-empted" },
    ]);
    expect(released).toMatchObject([
      { ok: true, hold: { status: "released" } },
      { ok: true, hold: { status: "released" } },
    ]);
    const before = await books(a);
    const results = await holdOps(owner, [place(a.keyId, SOURCE[owner]!, hold), grant(a.keyId, SOURCE[owner]!, allowance)]);
    expect(results).toEqual([
      { ok: false, error: expect.objectContaining({ status: 409, code: "foreign_hold" }) },
      { ok: false, error: expect.objectContaining({ status: 409, code: "foreign_hold" }) },
    ]);
    expect(await books(a)).toEqual(before);
    // The actor's own tombstone still stops the actor's own late placement, as before.
    const own = randomUUID();
    await holdOps(actor, [{ op: "release", hold_id: own, organization_id: a.organizationId, reason: "gave up" }]);
    expect((await holdOps(actor, [place(a.keyId, SOURCE[actor]!, own)]))[0]).toMatchObject({ ok: true, hold: { status: "released" } });
  });

  it("media-jobs-worker resolves media-jobs' hold and allowance and places in media-jobs' name; text still places as text", async () => {
    const a = await ownedBy("media-jobs");
    const results = await holdOps("media-jobs-worker", [
      { op: "settle", hold_id: a.hold, amount_microrub: 4_000 },
      { op: "release", hold_id: a.allowance, reason: "idle", used_microrub: 0 },
      place(a.keyId, "media-jobs"),
    ]);
    expect(results).toMatchObject([
      { ok: true, hold: { status: "settled", settled_microrub: 4_000 } },
      { ok: true, hold: { status: "released" } },
      { ok: true, hold: { status: "active", source: "media-jobs" } },
    ]);
    expect((await holdOps("text", [place(a.keyId, "text")]))[0]).toMatchObject({ ok: true, hold: { source: "text" } });
    expect((await books(a)).balance).toMatchObject({ balance_microrub: 996_000, reserved_microrub: 20_000 });
  });
});

describe("over the bus (billing.hold.settle / billing.hold.release)", () => {
  const rejected = () => counterValue(h.metrics, "billing_hold_commands_total", { outcome: "rejected" });
  const applied = () => counterValue(h.metrics, "billing_hold_commands_total", { outcome: "applied" });
  const spend = (a: { keyId: string; allowance: string }, id: string, owner: Deployable) => ({
    allowance_id: a.allowance,
    key_id: a.keyId,
    reserved_microrub: 1_000,
    operation: OPERATION[SOURCE[owner]!],
    model: "m",
    owner_ref: `req-${id}`,
  });

  // Places and grants are internal calls only: the bus carries settlements and releases.
  it.each(FOREIGN_PAIRS)("%s's commands on %s's hold and allowance are dead-lettered as foreign; nothing moved", async (actor, owner) => {
    const a = await ownedBy(owner);
    const before = await books(a);
    const since = await rejected();
    const [r1, r2] = [randomUUID(), randomUUID()];
    const bus = busOf(actor);
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: a.hold, amount_microrub: 5_000 });
    await bus.publish("billing.hold.release", { version: "v1", hold_id: a.hold, reason: "not mine" });
    await bus.publish("billing.hold.release", { version: "v1", hold_id: a.allowance, reason: "idle", used_microrub: 0 });
    // Requests on the owner's allowance, as if the actor had placed them there.
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: r1, amount_microrub: 1_000, allowance: spend(a, r1, owner) });
    await bus.publish("billing.hold.release", { version: "v1", hold_id: r2, reason: "failed", allowance: spend(a, r2, owner) });
    await until(async () => (await rejected()) === since + 5, 15_000, "five refusals");

    const dead = await drainQueue(vhost.url, DLQ);
    expect(dead.map((m) => String(m.headers[MessageHeaders.deadError]))).toEqual(Array.from({ length: 5 }, () => expect.stringContaining("foreign")));
    expect(await books(a)).toEqual(before);
    expect(await h.services.holdReads.find(r1)).toBeUndefined();
    expect(await h.services.holdReads.find(r2)).toBeUndefined();
  });

  it("media-jobs-worker's commands on media-jobs' hold and allowance are applied", async () => {
    const a = await ownedBy("media-jobs");
    const since = await applied();
    const r1 = randomUUID();
    const bus = busOf("media-jobs-worker");
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: a.hold, amount_microrub: 4_000 });
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: r1, amount_microrub: 600, allowance: spend(a, r1, "media-jobs") });
    await bus.publish("billing.hold.release", { version: "v1", hold_id: a.allowance, reason: "idle", used_microrub: 1_000 });
    await until(async () => (await applied()) === since + 3, 15_000, "three commands applied");

    expect(await h.services.holdReads.find(r1)).toMatchObject({ status: "settled", settled_microrub: 600, allowance_id: a.allowance, source: "media-jobs" });
    expect(await h.services.holdReads.find(a.allowance)).toMatchObject({ status: "released" });
    expect((await books(a)).balance).toMatchObject({ balance_microrub: 995_400, reserved_microrub: 0 });
    expect(await drainQueue(vhost.url, DLQ)).toEqual([]);
  });
});
