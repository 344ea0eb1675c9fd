import { randomUUID } from "node:crypto";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, UNROUTED_QUEUE, type Bus, type Consumer } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually } from "./support/waiting";

let vhost: TestVhost;
let inspector: BrokerInspector;
const buses: Bus[] = [];
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  inspector = await openInspector(vhost.url);
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  await Promise.all(buses.splice(0).map((bus) => bus.close()));
});

afterAll(async () => {
  await inspector?.close();
  await vhost?.drop();
});

const revoked = () => ({ version: "v1" as const, key_id: randomUUID() });

async function replica(name: string): Promise<Bus> {
  const bus = await connectBus({
    topology: "declare",
    url: vhost.url,
    name,
    keys: testKeys("billing-ledger"),
    reconnect: { initialDelayMs: 50, maxDelayMs: 300 },
  });
  buses.push(bus);
  return bus;
}

async function queueExists(queue: string): Promise<boolean> {
  return inspector.messageCount(queue).then(
    () => true,
    () => false,
  );
}

test("every replica hears an event on its own exclusive queue, and nothing outlives the replicas", async () => {
  const heard: Record<string, string[]> = { a: [], b: [] };
  for (const name of ["a", "b"] as const) {
    const bus = await replica(`gateway-${name}`);
    consumers.push(
      await bus.consume({
        queue: "test.key-revocations",
        exclusive: true,
        routingKeys: ["billing.key.revoked"],
        handler: async (payload) => {
          heard[name]!.push(payload.key_id);
        },
      }),
    );
  }
  const publisher = await replica("billing");
  const event = revoked();
  await publisher.publish("billing.key.revoked", event);
  await eventually(() => expect(heard).toEqual({ a: [event.key_id], b: [event.key_id] }));
  // No retry or dead-letter queues were declared for them.
  expect(await queueExists("test.key-revocations.dlq")).toBe(false);

  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  await Promise.all(buses.filter((bus) => bus !== publisher).map((bus) => bus.close()));
  // With both replicas gone their queues are gone too: the next event is bound to nothing.
  const late = await publisher.publish("billing.key.revoked", revoked());
  expect((await inspector.take(UNROUTED_QUEUE))?.properties.messageId).toBe(late);
});

test("a failing handler on an exclusive queue drops the message instead of retrying or dead-lettering it", async () => {
  const bus = await replica("gateway-failing");
  const calls: string[] = [];
  consumers.push(
    await bus.consume({
      queue: "test.failing",
      exclusive: true,
      routingKeys: ["billing.key.revoked"],
      retry: { maxAttempts: 3, backoffMs: [10] },
      handler: async (payload) => {
        calls.push(payload.key_id);
        if (calls.length === 1) throw new Error("cache unavailable");
      },
    }),
  );
  const first = revoked();
  const second = revoked();
  await bus.publish("billing.key.revoked", first);
  await eventually(() => expect(calls).toEqual([first.key_id]));
  await bus.publish("billing.key.revoked", second);
  await eventually(() => expect(calls).toContain(second.key_id));
  expect(calls).toEqual([first.key_id, second.key_id]);
  expect(await queueExists("test.failing.dlq")).toBe(false);
  expect(await queueExists("test.failing.delay.10")).toBe(false);
});

test("an exclusive consumer declares a fresh queue after the broker drops its connection", async () => {
  const bus = await replica("gateway-reconnecting");
  const heard: string[] = [];
  consumers.push(
    await bus.consume({
      queue: "test.reconnecting",
      exclusive: true,
      routingKeys: ["billing.key.revoked"],
      handler: async (payload) => {
        heard.push(payload.key_id);
      },
    }),
  );
  await vhost.closeConnections();
  await eventually(() => expect(bus.isConnected()).toBe(true));
  // Published until one arrives: the consumer reattaches a moment after the connection is back.
  const sent: string[] = [];
  await eventually(async () => {
    const event = revoked();
    sent.push(event.key_id);
    await bus.publish("billing.key.revoked", event);
    await eventually(() => expect(heard.length).toBeGreaterThan(0), 200);
  });
  expect(sent).toContain(heard[0]);
});
