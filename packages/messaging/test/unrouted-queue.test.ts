import { randomUUID } from "node:crypto";
import { connect } from "amqplib";
import { Registry } from "prom-client";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, registerUnroutedGauge, UNROUTED_METRIC, UNROUTED_QUEUE, UNROUTED_QUEUE_MAX_LENGTH, type Bus } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";

let vhost: TestVhost;
let bus: Bus;
let inspector: BrokerInspector;

beforeEach(async () => {
  vhost = await createTestVhost();
});

afterEach(async () => {
  await bus?.close();
  await inspector?.close();
  await vhost?.drop();
});

/** Nothing consumes billing.catalog.changed in a fresh vhost, so each of these is unroutable. */
const changed = () => ({ version: "v1" as const, model_id: `m-${randomUUID()}` });

async function gaugeValue(registry: Registry): Promise<number> {
  const metric = await registry.getSingleMetric(UNROUTED_METRIC)?.get();
  return metric?.values[0]?.value ?? Number.NaN;
}

test("the unrouted queue keeps at most its bound, dropping the oldest, and publishers never see a refusal", async () => {
  bus = await connectBus({ url: vhost.url, name: "unrouted-bound-test", keys: testKeys("billing-ledger") });
  inspector = await openInspector(vhost.url);
  const extra = 5;
  const ids: string[] = [];
  for (let start = 0; start < UNROUTED_QUEUE_MAX_LENGTH + extra; start += 500) {
    const batch = Array.from({ length: Math.min(500, UNROUTED_QUEUE_MAX_LENGTH + extra - start) }, () => bus.publish("billing.catalog.changed", changed()));
    ids.push(...(await Promise.all(batch)));
  }
  expect(await inspector.messageCount(UNROUTED_QUEUE)).toBe(UNROUTED_QUEUE_MAX_LENGTH);
  // One channel publishes in call order, so the first `extra` ids are the oldest: those are the ones gone.
  expect((await inspector.take(UNROUTED_QUEUE))?.properties.messageId).toBe(ids[extra]);
});

test("the gauge reports how many messages wait in the unrouted queue", async () => {
  bus = await connectBus({ url: vhost.url, name: "unrouted-metric-test", keys: testKeys("billing-ledger") });
  const registry = new Registry();
  registerUnroutedGauge(bus, registry);
  expect(await gaugeValue(registry)).toBe(0);
  for (let i = 0; i < 3; i++) await bus.publish("billing.catalog.changed", changed());
  expect(await gaugeValue(registry)).toBe(3);
  expect(await registry.metrics()).toContain(`${UNROUTED_METRIC} 3`);
});

test("an unbounded unrouted queue left by an earlier version is replaced by the bounded one", async () => {
  const old = await connect(vhost.url);
  try {
    const channel = await old.createChannel();
    await channel.assertQueue(UNROUTED_QUEUE, { durable: true });
    await channel.close();
  } finally {
    await old.close();
  }
  bus = await connectBus({ url: vhost.url, name: "unrouted-migration-test", keys: testKeys("billing-ledger"), connectTimeoutMs: 10_000 });
  const messageId = await bus.publish("billing.catalog.changed", changed());
  inspector = await openInspector(vhost.url);
  expect((await inspector.take(UNROUTED_QUEUE))?.properties.messageId).toBe(messageId);
  // The queue now carries the bound: declaring it unbounded, as the old version did, is refused.
  const probe = await connect(vhost.url);
  try {
    const channel = await probe.createChannel();
    channel.on("error", () => undefined);
    await expect(channel.assertQueue(UNROUTED_QUEUE, { durable: true })).rejects.toMatchObject({ code: 406 });
  } finally {
    await probe.close().catch(() => undefined);
  }
});
