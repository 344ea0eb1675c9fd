import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { CommandQueues } from "@meter/contracts";
import { connectBus, MessageHeaders, REFUSED_METRIC, signMessage, type Bus, type Consumer } from "@meter/messaging";
import { createLogger, Metrics } from "@meter/service-kit";
import { createTestVhost, drainQueue, publishByHand, readyMessages, testKeys, type TestVhost } from "@meter/testing";
import type { Counter } from "prom-client";
import { createBillingServices } from "../src/composition";
import { startHoldCommandConsumer } from "../src/holds/hold-commands.consumer";
import { createDatabase } from "../src/db";
import type { HoldService } from "../src/holds/hold.service";
import { counterValue, holdCalls, placeOp, seedAccount, startBilling, testGrants, until, type BillingHarness } from "./support/billing-harness";

let h: BillingHarness;
let vhost: TestVhost;
let bus: Bus;
let outcomes: Counter<"outcome">;
beforeAll(async () => {
  h = await startBilling();
  vhost = await createTestVhost();
  // Signs as text, a producer of hold commands; refusals count on billing's own registry.
  // (On a vhost of the test's own, whose topology it declares as billing-ledger would.)
  bus = await connectBus({ url: vhost.url, name: "hold-commands-test", topology: "declare", keys: testKeys("text"), registry: h.metrics.registry });
  // The composition registered it for its own consumer; this test's consumers count into the same one.
  outcomes = h.metrics.registry.getSingleMetric("billing_hold_commands_total") as Counter<"outcome">;
  // Billing has run before (its consumer declares its queue), so commands sent while it is down wait there.
  bus.requireQueue(CommandQueues.billingHoldCommands);
  await (await start()).stop();
});
afterAll(async () => {
  await h.assertBooksBalance();
  await bus.close();
  await vhost.drop();
  await h.close();
});

const logger = createLogger("hold-commands-test", "silent");
const status = async (id: string) => (await h.services.holdReads.find(id))?.status;
const commands = (outcome: string) => counterValue(h.metrics, "billing_hold_commands_total", { outcome });
const start = (holds: HoldService = h.services.holds): Promise<Consumer> => startHoldCommandConsumer(bus, holds, logger, outcomes);

it("a settlement published while billing is down is applied once billing is back; a duplicate is applied once", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const settleId = randomUUID();
  const releaseId = randomUUID();
  for (const id of [settleId, releaseId]) expect((await holdCalls(h).place(a.keyId, 10_000, id)).status).toBe(200);

  // Billing's consumer is not running: the commands wait in the queue.
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
  await bus.publish("billing.hold.release", { version: "v1", hold_id: releaseId, reason: "upstream failed" });
  expect(await status(settleId)).toBe("active");

  const applied = await commands("applied");
  const duplicates = await commands("duplicate");
  const consumer = await start();
  try {
    await until(async () => (await status(settleId)) === "settled" && (await status(releaseId)) === "released");
    // A late duplicate changes nothing either.
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: settleId, amount_microrub: 6_000 });
    await until(async () => (await commands("duplicate")) === duplicates + 2, 10_000, "both duplicates acknowledged");
    expect(await commands("applied")).toBe(applied + 2);
  } finally {
    await consumer.stop();
  }

  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 94_000, reserved_microrub: 0 });
  const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
  const entries = ledger.body.data as { kind: string; hold_id: string; reference: string | null }[];
  expect(entries.filter((e) => e.kind === "settle" && e.hold_id === settleId)).toHaveLength(1);
  expect(entries.find((e) => e.kind === "release" && e.hold_id === releaseId)?.reference).toBe("upstream failed");
});

it("applies 500 settlements, each delivered twice, in far fewer than 500 transactions, each hold settled exactly once", async () => {
  const accounts = await Promise.all(Array.from({ length: 10 }, () => seedAccount(h, { credit: 10_000_000 })));
  const places = Array.from({ length: 500 }, (_, i) => placeOp(accounts[i % accounts.length]!.keyId, 1_000));
  const placed = await h.services.holds.apply(places);
  expect(placed.every((r) => !(r instanceof Error) && r.outcome === "placed")).toBe(true);

  // Every command twice, as a relay that crashed before marking its outbox rows would send them again.
  const settle = (i: number) => bus.publish("billing.hold.settle", { version: "v1", hold_id: places[i]!.hold_id, amount_microrub: 100 + i });
  await Promise.all(places.map((_, i) => settle(i)));
  await Promise.all(places.map((_, i) => settle(i)));

  const before = {
    transactions: await counterValue(h.metrics, "billing_hold_transactions_total"),
    applied: await commands("applied"),
    duplicates: await commands("duplicate"),
  };
  // Each batch the consumer receives is handed over whole.
  const batches: number[] = [];
  const counting = Object.create(h.services.holds) as HoldService;
  counting.apply = (ops) => {
    batches.push(ops.length);
    return h.services.holds.apply(ops);
  };
  const consumer = await start(counting);
  try {
    await until(
      async () => (await commands("applied")) + (await commands("duplicate")) - before.applied - before.duplicates === 1_000,
      30_000,
      "1000 commands",
    );
  } finally {
    await consumer.stop();
  }
  expect(await commands("applied")).toBe(before.applied + 500);
  expect(await commands("duplicate")).toBe(before.duplicates + 500);
  const transactions = (await counterValue(h.metrics, "billing_hold_transactions_total")) - before.transactions;
  // One transaction per batch received, and few batches: up to 200 commands each.
  expect(transactions).toBe(batches.length);
  expect(transactions).toBeLessThan(50);
  expect(Math.max(...batches)).toBeGreaterThan(50);

  const ids = places.map((p) => p.hold_id);
  const settles = await h.db.ledgerEntry.groupBy({
    by: ["holdId"],
    where: { kind: "settle", holdId: { in: ids } },
    _count: { _all: true },
    _sum: { amount: true },
  });
  expect(settles).toHaveLength(500);
  expect(settles.every((s) => s._count._all === 1)).toBe(true);
  expect(settles.reduce((sum, s) => sum + (s._sum.amount ?? 0n), 0n)).toBe(BigInt(500 * 100 + (499 * 500) / 2));
});

it("a command that conflicts with how the hold was resolved is acknowledged and counted, never requeued", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const holdId = randomUUID();
  await holdCalls(h).place(a.keyId, 5_000, holdId);
  await holdCalls(h).release(holdId, "client went away");
  const conflicts = await commands("conflict");
  const consumer = await start();
  try {
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: holdId, amount_microrub: 5_000 });
    await until(async () => (await commands("conflict")) === conflicts + 1, 10_000, "the conflict counted");
  } finally {
    await consumer.stop();
  }
  expect(await status(holdId)).toBe("released");
  // Acknowledged: not back in the queue, not waiting in a retry queue, not dead-lettered.
  expect(await messagesIn(vhost)).toEqual({});
});

it("while the database is unreachable a command is retried with back-off, then applied once it is back", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const holdId = randomUUID();
  await holdCalls(h).place(a.keyId, 5_000, holdId);

  const dead = createDatabase(h.url.replace(/\/[^/?]+(\?|$)/, "/no_such_database_for_billing$1"), 1);
  const brokenMetrics = new Metrics("billing-ledger");
  const broken = createBillingServices(dead, { timezone: "UTC", metrics: brokenMetrics, grants: testGrants() });
  const notApplied = await commands("not_applied");
  const first = await start(broken.holds);
  try {
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: holdId, amount_microrub: 4_000 });
    await until(async () => (await commands("not_applied")) === notApplied + 1, 10_000, "the failed attempt");
  } finally {
    await first.stop();
    await dead.close();
  }
  expect(await status(holdId)).toBe("active");

  // The database is back: the retried delivery (after the policy's first back-off) is applied.
  const second = await start();
  try {
    await until(async () => (await status(holdId)) === "settled", 15_000, "the retried settlement");
  } finally {
    await second.stop();
  }
  expect((await h.services.holdReads.find(holdId))?.settled_microrub).toBe(4_000);
});

it("hand-made hold commands (unsigned, from a deployable that may not send them, tampered) are dead-lettered and the hold stays active", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const holdId = randomUUID();
  await holdCalls(h).place(a.keyId, 5_000, holdId);
  const refusedBefore = await counterValue(h.metrics, REFUSED_METRIC, { routing_key: "billing.hold.release", reason: "forbidden-producer" });
  const release = JSON.stringify({ version: "v1", hold_id: holdId, reason: "forged" });
  const settleForNothing = JSON.stringify({ version: "v1", hold_id: holdId, amount_microrub: 0 });
  const forged = [
    { routingKey: "billing.hold.release", content: release, signer: undefined },
    { routingKey: "billing.hold.settle", content: settleForNothing, signer: undefined },
    // The files worker parses untrusted files: its key must not move money.
    { routingKey: "billing.hold.release", content: release, signer: "files-worker" },
    { routingKey: "billing.hold.settle", content: settleForNothing, signer: "gateway" },
  ] as const;
  const consumer = await start();
  try {
    for (const f of forged) {
      const messageId = randomUUID();
      const headers = f.signer ? signMessage(testKeys(f.signer), { routingKey: f.routingKey, messageId, body: Buffer.from(f.content) }) : {};
      await publishByHand(vhost.url, { routingKey: f.routingKey, content: f.content, messageId, headers });
    }
    // Text really signed a settle of the whole hold; the body on the wire says 0.
    const messageId = randomUUID();
    const signed = JSON.stringify({ version: "v1", hold_id: holdId, amount_microrub: 5_000 });
    const headers = signMessage(testKeys("text"), { routingKey: "billing.hold.settle", messageId, body: Buffer.from(signed) });
    await publishByHand(vhost.url, { routingKey: "billing.hold.settle", content: settleForNothing, messageId, headers });

    await until(async () => (await messagesIn(vhost))["billing-ledger.hold-commands.dlq"] === 5, 10_000, "five dead letters");
  } finally {
    await consumer.stop();
  }
  expect(await status(holdId)).toBe("active");
  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 100_000, reserved_microrub: 5_000 });
  expect(await counterValue(h.metrics, REFUSED_METRIC, { routing_key: "billing.hold.release", reason: "forbidden-producer" })).toBe(refusedBefore + 1);
  const dead = await drainQueue(vhost.url, "billing-ledger.hold-commands.dlq");
  expect(dead.map((m) => String(m.headers[MessageHeaders.deadReason])).sort()).toEqual([
    "bad-signature",
    "forbidden-producer",
    "forbidden-producer",
    "unsigned",
    "unsigned",
  ]);
  await holdCalls(h).release(holdId, "test done");
});

it("a hold command from a producer that did not place the hold (media-jobs for text's hold) is dead-lettered; the owner's applies", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const holdId = randomUUID();
  await holdCalls(h).place(a.keyId, 5_000, holdId);
  const media = await connectBus({ url: vhost.url, name: "media-jobs-test", topology: "await", keys: testKeys("media-jobs-worker") });
  const consumer = await start();
  try {
    await media.publish("billing.hold.settle", { version: "v1", hold_id: holdId, amount_microrub: 0 });
    await until(async () => (await messagesIn(vhost))["billing-ledger.hold-commands.dlq"] === 1, 10_000, "the foreign command dead-lettered");
    expect(await status(holdId)).toBe("active");
    await bus.publish("billing.hold.settle", { version: "v1", hold_id: holdId, amount_microrub: 2_000 });
    await until(async () => (await status(holdId)) === "settled", 10_000, "the owner's settlement");
  } finally {
    await consumer.stop();
    await media.close();
  }
  const dead = await drainQueue(vhost.url, "billing-ledger.hold-commands.dlq");
  expect(dead.map((m) => String(m.headers[MessageHeaders.deadError]))).toEqual([expect.stringContaining("foreign")]);
  expect((await h.services.holdReads.find(holdId))?.settled_microrub).toBe(2_000);
});

it("a valid settlement replayed by hand, bytes and headers as they were, charges once", async () => {
  const a = await seedAccount(h, { credit: 100_000 });
  const holdId = randomUUID();
  await holdCalls(h).place(a.keyId, 5_000, holdId);
  const messageId = randomUUID();
  const content = JSON.stringify({ version: "v1", hold_id: holdId, amount_microrub: 3_000 });
  const headers = signMessage(testKeys("text"), { routingKey: "billing.hold.settle", messageId, body: Buffer.from(content) });
  const duplicates = await commands("duplicate");
  const consumer = await start();
  try {
    await publishByHand(vhost.url, { routingKey: "billing.hold.settle", content, messageId, headers });
    await until(async () => (await status(holdId)) === "settled", 10_000, "the settlement");
    for (let i = 0; i < 3; i++) await publishByHand(vhost.url, { routingKey: "billing.hold.settle", content, messageId, headers });
    await until(async () => (await commands("duplicate")) === duplicates + 3, 10_000, "three replays acknowledged");
  } finally {
    await consumer.stop();
  }
  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 97_000, reserved_microrub: 0 });
  expect(await messagesIn(vhost)).toEqual({});
});

it("requests on an allowance and its close arrive over the bus in any order: each request charged once, the rest released once", async () => {
  const a = await seedAccount(h, { credit: 1_000_000 });
  const allowanceId = randomUUID();
  const granted = await h.services.holds.answerAs("text", [
    { op: "grant", hold_id: allowanceId, key_id: a.keyId, amount_microrub: 100_000, min_microrub: 1_000, operation: "text", source: "text", owner_ref: "al-1" },
  ]);
  expect(granted[0]).toMatchObject({ kind: "allowance", status: "active", amount_microrub: 100_000 });
  const spend = (id: string, estimate: number) => ({
    allowance_id: allowanceId,
    key_id: a.keyId,
    reserved_microrub: estimate,
    operation: "text" as const,
    model: "m",
    owner_ref: `req-${id}`,
  });
  const [r1, r2] = [randomUUID(), randomUUID()];
  // The close overtakes its requests' commands; the first settlement is delivered twice.
  await bus.publish("billing.hold.release", { version: "v1", hold_id: allowanceId, reason: "idle", used_microrub: 8_000 });
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: r1, amount_microrub: 2_500, allowance: spend(r1, 5_000) });
  await bus.publish("billing.hold.settle", { version: "v1", hold_id: r1, amount_microrub: 2_500, allowance: spend(r1, 5_000) });
  await bus.publish("billing.hold.release", { version: "v1", hold_id: r2, reason: "upstream failed", allowance: spend(r2, 3_000) });
  // media-jobs signs a settlement on text's allowance: it moves nothing.
  const media = await connectBus({ url: vhost.url, name: "media-jobs-test", topology: "await", keys: testKeys("media-jobs-worker") });
  const foreign = randomUUID();
  await media.publish("billing.hold.settle", { version: "v1", hold_id: foreign, amount_microrub: 1_000, allowance: spend(foreign, 1_000) });
  const consumer = await start();
  try {
    await until(async () => (await status(allowanceId)) === "released", 15_000, "the allowance released");
    await until(async () => (await messagesIn(vhost))["billing-ledger.hold-commands.dlq"] === 1, 10_000, "the foreign command dead-lettered");
  } finally {
    await consumer.stop();
    await media.close();
  }
  expect(await h.services.holdReads.find(r1)).toMatchObject({ status: "settled", settled_microrub: 2_500, allowance_id: allowanceId });
  expect(await h.services.holdReads.find(r2)).toMatchObject({ status: "released", amount_microrub: 3_000, allowance_id: allowanceId });
  expect(await status(foreign)).toBeUndefined();
  const balance = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/balance`).expect(200);
  expect(balance.body).toMatchObject({ balance_microrub: 997_500, reserved_microrub: 0 });
  const ledger = await h.call("GET", `/admin/v1/organizations/${a.organizationId}/ledger`).expect(200);
  const release = (ledger.body.data as { kind: string; hold_id: string; amount_microrub: number }[]).filter(
    (e) => e.hold_id === allowanceId && e.kind === "release",
  );
  expect(release.map((e) => e.amount_microrub)).toEqual([92_000]);
  await drainQueue(vhost.url, "billing-ledger.hold-commands.dlq");
});

/**
 * Messages waiting in the vhost's durable queues, by queue (empty queues left out): rabbitmqctl names
 * them, the queues themselves count (readyMessages: rabbitmqctl's counts of a quorum queue lag an ack).
 */
async function messagesIn(v: TestVhost): Promise<Record<string, number>> {
  const { stdout } = await promisify(execFile)(process.env.RABBITMQCTL ?? "rabbitmqctl", ["--quiet", "list_queues", "-p", v.name, "name", "durable"]);
  const names = stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([name, durable]) => name && durable === "true")
    .map(([name]) => name!);
  const counts = await readyMessages(v.url, names);
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}
