import { randomUUID } from "node:crypto";
import { connect } from "amqplib";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import {
  BusUnavailableError,
  connectBus,
  InvalidMessageError,
  MessageHeaders,
  NonRetryableError,
  QueueNotDeclaredError,
  signMessage,
  UNROUTED_QUEUE,
  type Bus,
  type Consumer,
  type MessageMeta,
} from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually, sleep } from "./support/waiting";

let vhost: TestVhost;
let bus: Bus;
let inspector: BrokerInspector;
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  bus = await connectBus({
    topology: "declare",
    url: vhost.url,
    name: "bus-test",
    keys: testKeys("billing-ledger"),
    reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
  });
  inspector = await openInspector(vhost.url);
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
});

afterAll(async () => {
  await bus?.close();
  await inspector?.close();
  await vhost?.drop();
});

const revoked = () => ({ version: "v1" as const, key_id: randomUUID() });
const queueName = () => `test.${randomUUID().slice(0, 8)}`;

async function take(queue: string) {
  return eventually(async () => {
    const message = await inspector.take(queue);
    if (!message) throw new Error(`nothing on ${queue} yet`);
    return message;
  });
}

test("a published message reaches the consumer, validated and with its meta", async () => {
  const received: { payload: unknown; meta: MessageMeta }[] = [];
  consumers.push(
    await bus.consume({
      queue: queueName(),
      routingKeys: ["billing.key.revoked"],
      handler: async (payload, meta) => {
        received.push({ payload, meta });
      },
    }),
  );
  const payload = revoked();
  const messageId = await bus.publish("billing.key.revoked", payload, { headers: { "request-id": "r-1" } });

  await eventually(() => expect(received).toHaveLength(1));
  expect(received[0]).toEqual({
    payload,
    meta: { messageId, routingKey: "billing.key.revoked", producer: "billing-ledger", attempt: 1, redelivered: false, headers: { "request-id": "r-1" } },
  });
});

test("publish refuses a payload the catalog rejects, and the caller's message id is kept", async () => {
  const bad = { version: "v1", key_id: "not-a-uuid" } as unknown as ReturnType<typeof revoked>;
  await expect(bus.publish("billing.key.revoked", bad)).rejects.toBeInstanceOf(InvalidMessageError);
  const messageId = randomUUID();
  await expect(bus.publish("billing.key.revoked", revoked(), { messageId })).resolves.toBe(messageId);
});

test("an invalid payload on the wire goes to the dead-letter queue with the reason, never to the handler", async () => {
  const queue = queueName();
  const handler = jest.fn(async () => undefined);
  consumers.push(await bus.consume({ queue, routingKeys: ["billing.hold.settle"], handler }));

  // Signed by a producer of the key, so what fails is the content.
  const signedRaw = (content: string, messageId: string) =>
    inspector.publishRaw("meter", "billing.hold.settle", content, {
      messageId,
      headers: signMessage(testKeys("text"), { routingKey: "billing.hold.settle", messageId, body: Buffer.from(content) }),
    });
  await signedRaw(JSON.stringify({ version: "v1", hold_id: randomUUID(), amount_microrub: -5 }), "m-invalid");
  await signedRaw("{not json", "m-garbage");

  const first = await take(`${queue}.dlq`);
  const second = await take(`${queue}.dlq`);
  const byId = new Map([first, second].map((m) => [m.properties.messageId as string, m.properties.headers ?? {}]));
  expect(byId.get("m-invalid")?.[MessageHeaders.deadReason]).toBe("invalid-payload");
  expect(String(byId.get("m-invalid")?.[MessageHeaders.deadError])).toContain("amount_microrub");
  expect(byId.get("m-invalid")?.[MessageHeaders.routingKey]).toBe("billing.hold.settle");
  expect(byId.get("m-garbage")?.[MessageHeaders.deadReason]).toBe("invalid-json");
  expect(handler).not.toHaveBeenCalled();
});

test("a failing handler is retried after each backoff, then the message is dead-lettered", async () => {
  const queue = queueName();
  const calls: { attempt: number; at: number; routingKey: string }[] = [];
  consumers.push(
    await bus.consume({
      queue,
      routingKeys: ["billing.catalog.changed"],
      retry: { maxAttempts: 3, backoffMs: [200, 400] },
      handler: async (_payload, meta) => {
        calls.push({ attempt: meta.attempt, at: Date.now(), routingKey: meta.routingKey });
        throw new Error("ledger unavailable");
      },
    }),
  );
  const messageId = await bus.publish("billing.catalog.changed", { version: "v1", model_id: "gpt-x" });

  const dead = await take(`${queue}.dlq`);
  expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
  expect(calls.every((c) => c.routingKey === "billing.catalog.changed")).toBe(true);
  const [a, b, c] = calls;
  expect(b!.at - a!.at).toBeGreaterThanOrEqual(180);
  expect(c!.at - b!.at).toBeGreaterThanOrEqual(380);
  expect(dead.properties.messageId).toBe(messageId);
  expect(dead.properties.headers?.[MessageHeaders.deadReason]).toBe("max-attempts");
  expect(dead.properties.headers?.[MessageHeaders.attempt]).toBe(3);
  expect(dead.properties.headers?.[MessageHeaders.deadError]).toBe("ledger unavailable");
  expect(await inspector.messageCount(queue)).toBe(0);
  expect(await inspector.messageCount(`${queue}.delay.200`)).toBe(0);
});

test("a handler recovering on a retry acks the message", async () => {
  const queue = queueName();
  const attempts: number[] = [];
  consumers.push(
    await bus.consume({
      queue,
      routingKeys: ["billing.key.revoked"],
      retry: { maxAttempts: 5, backoffMs: [50] },
      handler: async (_payload, meta) => {
        attempts.push(meta.attempt);
        if (meta.attempt < 3) throw new Error("not yet");
      },
    }),
  );
  await bus.publish("billing.key.revoked", revoked());
  await eventually(() => expect(attempts).toEqual([1, 2, 3]));
  await sleep(200);
  expect(attempts).toEqual([1, 2, 3]);
  expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
});

test("NonRetryableError sends the message straight to the dead-letter queue", async () => {
  const queue = queueName();
  const handler = jest.fn(async () => {
    throw new NonRetryableError("hold does not exist");
  });
  consumers.push(await bus.consume({ queue, routingKeys: ["billing.key.revoked"], retry: { backoffMs: [50] }, handler }));
  await bus.publish("billing.key.revoked", revoked());

  const dead = await take(`${queue}.dlq`);
  expect(dead.properties.headers?.[MessageHeaders.deadReason]).toBe("non-retryable");
  expect(dead.properties.headers?.[MessageHeaders.deadError]).toBe("hold does not exist");
  expect(handler).toHaveBeenCalledTimes(1);
});

test("a message published while no consumer runs is consumed when one starts", async () => {
  const queue = queueName();
  const seen: string[] = [];
  const handler = async (_payload: unknown, meta: MessageMeta) => {
    seen.push(meta.messageId);
  };
  // The first run declares the queue; then the consumer goes away.
  await (await bus.consume({ queue, routingKeys: ["billing.catalog.changed"], handler })).stop();
  const whileDown = await bus.publish("billing.catalog.changed", { version: "v1", model_id: "gpt-x" });
  await sleep(100);
  expect(seen).toEqual([]);

  consumers.push(await bus.consume({ queue, routingKeys: ["billing.catalog.changed"], handler }));
  await eventually(() => expect(seen).toEqual([whileDown]));
});

test("a required queue's message is not published before its consumer has declared the queue, and never lands in the unrouted queue", async () => {
  const fresh = await createTestVhost();
  const consumerBus = await connectBus({ topology: "declare", url: fresh.url, name: "require-test-consumer", keys: testKeys("billing-ledger") });
  const publisher = await connectBus({ topology: "await", url: fresh.url, name: "require-test", keys: testKeys("text") });
  const spec = { queue: queueName(), routingKeys: ["billing.hold.settle"] as const };
  const settle = () => ({ version: "v1" as const, hold_id: randomUUID(), amount_microrub: 7 });
  try {
    publisher.requireQueue(spec);
    await expect(publisher.publish("billing.hold.settle", settle())).rejects.toBeInstanceOf(QueueNotDeclaredError);
    await expect(publisher.publish("billing.hold.settle", settle())).rejects.toBeInstanceOf(QueueNotDeclaredError);
    expect(await publisher.unroutedMessageCount()).toBe(0);

    const seen: string[] = [];
    const consumer = await consumerBus.consume({
      ...spec,
      handler: async (_p, meta) => {
        seen.push(meta.messageId);
      },
    });
    try {
      // Once declared, publishing goes on; the outbox sends what it could not send before (outbox-relay's retries).
      const messageId = await publisher.publish("billing.hold.settle", settle());
      await eventually(() => expect(seen).toEqual([messageId]));
      expect(await publisher.unroutedMessageCount()).toBe(0);
    } finally {
      await consumer.stop();
    }
  } finally {
    await publisher.close();
    await consumerBus.close();
    await fresh.drop();
  }
});

test("a message published before any queue is bound is kept in the unrouted queue, not dropped", async () => {
  const fresh = await createTestVhost();
  const own = await connectBus({ topology: "declare", url: fresh.url, name: "unrouted-test", keys: testKeys("text") });
  const look = await openInspector(fresh.url);
  try {
    const messageId = await own.publish("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 7 });
    const kept = await look.take(UNROUTED_QUEUE);
    expect(kept?.properties.messageId).toBe(messageId);
    expect(kept?.fields.routingKey).toBe("billing.hold.settle");
  } finally {
    await look.close();
    await own.close();
    await fresh.drop();
  }
});

test("the consumer survives the broker closing its connection", async () => {
  const queue = queueName();
  const seen: string[] = [];
  consumers.push(
    await bus.consume({
      queue,
      routingKeys: ["billing.key.revoked"],
      handler: async (_p, meta) => {
        seen.push(meta.messageId);
      },
    }),
  );
  const before = await bus.publish("billing.key.revoked", revoked());
  await eventually(() => expect(seen).toEqual([before]));

  await vhost.closeConnections();
  await eventually(() => expect(bus.isConnected()).toBe(false), 5_000, 2);
  // publish waits for the reconnect; the consumer, subscribed again, gets the message.
  const after = await bus.publish("billing.key.revoked", revoked());
  await eventually(() => expect(seen).toEqual([before, after]));
  expect(await inspector.consumerCount(queue)).toBe(1);
});

test("publish fails with BusUnavailableError while the broker is unreachable and works once it is back", async () => {
  const own = await connectBus({
    topology: "declare",
    url: vhost.url,
    name: "outage-test",
    keys: testKeys("billing-ledger"),
    reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
  });
  try {
    await vhost.denyAccess();
    await vhost.closeConnections();
    await eventually(() => expect(own.isConnected()).toBe(false));
    await expect(own.publish("billing.key.revoked", revoked(), { timeoutMs: 300 })).rejects.toBeInstanceOf(BusUnavailableError);

    await vhost.allowAccess();
    await expect(own.publish("billing.key.revoked", revoked(), { timeoutMs: 10_000 })).resolves.toEqual(expect.any(String));
  } finally {
    await vhost.allowAccess();
    await own.close();
  }
  // The shared bus lost its connection too; make sure it is back for whatever runs next.
  await eventually(() => expect(bus.isConnected()).toBe(true));
});

test("a closed bus refuses to publish", async () => {
  const own = await connectBus({ topology: "declare", url: vhost.url, name: "closed-test", keys: testKeys("billing-ledger") });
  await own.close();
  await expect(own.publish("billing.key.revoked", revoked())).rejects.toBeInstanceOf(BusUnavailableError);
});

test("connectBus fails with BusUnavailableError when the broker cannot be reached", async () => {
  await expect(
    connectBus({ topology: "await", url: "amqp://guest:guest@127.0.0.1:1/", name: "nowhere", keys: testKeys("billing-ledger"), connectTimeoutMs: 500 }),
  ).rejects.toBeInstanceOf(BusUnavailableError);
});

test("a producer started before the topology's owner waits for its exchanges, says so, and connects once they are declared", async () => {
  const fresh = await createTestVhost();
  const producer = await connectBus({ topology: "await", url: fresh.url, name: "early-producer", keys: testKeys("text"), publishTimeoutMs: 300 });
  const owner: Bus[] = [];
  try {
    // Up at once, not connected: nothing of the topology exists, and it declares none of it.
    expect(producer.waitingForTopology()).toBe(true);
    expect(producer.isConnected()).toBe(false);
    await expect(producer.publish("billing.key.revoked", revoked())).rejects.toBeInstanceOf(BusUnavailableError);
    // A consumer started meanwhile attaches once the topology is there.
    const heard: string[] = [];
    const early = await producer.consume({
      queue: "early.revoked",
      exclusive: true,
      routingKeys: ["billing.key.revoked"],
      handler: async ({ key_id }) => void heard.push(key_id),
    });
    consumers.push(early);
    await sleep(1_500);
    expect(producer.waitingForTopology()).toBe(true);
    const look = await connect(fresh.url);
    try {
      for (const exchange of ["meter", "meter.unrouted"]) {
        const channel = await look.createChannel();
        channel.on("error", () => undefined);
        await expect(channel.checkExchange(exchange)).rejects.toMatchObject({ code: 404 });
      }
    } finally {
      await look.close();
    }

    owner.push(await connectBus({ topology: "declare", url: fresh.url, name: "owner", keys: testKeys("billing-ledger") }));
    await eventually(() => expect(producer.isConnected()).toBe(true), 5_000);
    expect(producer.waitingForTopology()).toBe(false);
    const revocation = revoked();
    await eventually(async () => {
      await owner[0]!.publish("billing.key.revoked", revocation);
      expect(heard).toContain(revocation.key_id);
    }, 5_000);
  } finally {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    await producer.close();
    await Promise.all(owner.map((b) => b.close()));
    await fresh.drop();
  }
});
