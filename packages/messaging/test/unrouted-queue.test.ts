import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { connect } from "amqplib";
import { brokerRights, TOPOLOGY_OWNER } from "@meter/contracts";
import { Registry } from "prom-client";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, registerUnroutedGauge, UNROUTED_EXCHANGE, UNROUTED_METRIC, UNROUTED_QUEUE, UNROUTED_QUEUE_MAX_LENGTH, type Bus } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually } from "./support/waiting";

const run = promisify(execFile);

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
  bus = await connectBus({ topology: "declare", url: vhost.url, name: "unrouted-bound-test", keys: testKeys("billing-ledger") });
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
  bus = await connectBus({ topology: "declare", url: vhost.url, name: "unrouted-metric-test", keys: testKeys("billing-ledger") });
  const registry = new Registry();
  registerUnroutedGauge(bus, registry);
  expect(await gaugeValue(registry)).toBe(0);
  for (let i = 0; i < 3; i++) await bus.publish("billing.catalog.changed", changed());
  expect(await gaugeValue(registry)).toBe(3);
  expect(await registry.metrics()).toContain(`${UNROUTED_METRIC} 3`);
});

test("a classic unrouted queue of an earlier release is moved to a quorum queue by the topology's owner, as its own broker user, its messages kept", async () => {
  // What release 1.1.0 declared (topology.ts at 229f670): a bounded classic queue on its fanout exchange, with messages in it.
  const old = await connect(vhost.url);
  const kept: string[] = [];
  try {
    const channel = await old.createConfirmChannel();
    await channel.assertExchange(UNROUTED_EXCHANGE, "fanout", { durable: true });
    await channel.assertQueue(UNROUTED_QUEUE, { durable: true, arguments: { "x-max-length": UNROUTED_QUEUE_MAX_LENGTH, "x-overflow": "drop-head" } });
    await channel.bindQueue(UNROUTED_QUEUE, UNROUTED_EXCHANGE, "");
    await channel.assertExchange("meter", "topic", { durable: true, alternateExchange: UNROUTED_EXCHANGE });
    for (let i = 0; i < 3; i++) {
      kept.push(`unrouted-${i}`);
      channel.publish("meter", "billing.catalog.changed", Buffer.from("{}"), { messageId: `unrouted-${i}`, persistent: true });
    }
    await channel.waitForConfirms();
    await channel.close();
  } finally {
    await old.close();
  }
  expect(await queueTypes(vhost.name)).toMatchObject({ [UNROUTED_QUEUE]: "classic" });

  const owner = (await vhost.deployableUrls())[TOPOLOGY_OWNER];
  // Released before its broker user got this release's rights (broker-users.sh runs after the rollout):
  // it connects and works with the classic queue, which it may not move yet.
  const rights = brokerRights(TOPOLOGY_OWNER);
  const previous = (regex: string) => regex.replace("meter\\.unrouted(\\.moving)?", "meter\\.unrouted");
  const permit = (r: { configure: string; write: string; read: string }) =>
    run(process.env.RABBITMQCTL ?? "rabbitmqctl", [
      "--quiet",
      "set_permissions",
      "-p",
      vhost.name,
      `${vhost.name}.${TOPOLOGY_OWNER}`,
      r.configure,
      r.write,
      r.read,
    ]);
  await permit({ configure: previous(rights.configure), write: previous(rights.write), read: previous(rights.read) });
  bus = await connectBus({ url: owner, name: "unrouted-move-test", topology: "declare", keys: testKeys(TOPOLOGY_OWNER), connectTimeoutMs: 10_000 });
  expect(bus.isConnected()).toBe(true);
  expect(await queueTypes(vhost.name)).toMatchObject({ [UNROUTED_QUEUE]: "classic" });

  // With this release's rights, its next connection moves the queue.
  await permit(rights);
  await vhost.closeConnections();
  await eventually(async () => expect(await queueTypes(vhost.name)).toMatchObject({ [UNROUTED_QUEUE]: "quorum" }));
  await eventually(() => expect(bus.isConnected()).toBe(true));
  const after = await bus.publish("billing.catalog.changed", changed());

  const types = await queueTypes(vhost.name);
  expect(types[UNROUTED_QUEUE]).toBe("quorum");
  expect(Object.keys(types).filter((name) => name.endsWith(".moving"))).toEqual([]);
  inspector = await openInspector(vhost.url);
  const taken: string[] = [];
  for (let m = await inspector.take(UNROUTED_QUEUE); m; m = await inspector.take(UNROUTED_QUEUE)) taken.push(String(m.properties.messageId));
  expect(taken).toEqual([...kept, after]);
});

async function queueTypes(vhostName: string): Promise<Record<string, string>> {
  const { stdout } = await run(process.env.RABBITMQCTL ?? "rabbitmqctl", ["--quiet", "list_queues", "-p", vhostName, "name", "type", "--no-table-headers"]);
  return Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((line) => line.trim().split(/\s+/) as [string, string]),
  );
}
