import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { connect, type ChannelModel } from "amqplib";
import { Registry } from "prom-client";
import { CommandQueues } from "@meter/contracts";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import {
  connectBus,
  DEAD_LETTER_METRIC,
  DEAD_LETTER_QUEUE_MAX_LENGTH,
  DELIVERY_LIMIT,
  NonRetryableError,
  replayDeadLetters,
  showDeadLetters,
  type Bus,
  type Consumer,
} from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually, sleep } from "./support/waiting";

const run = promisify(execFile);

let vhost: TestVhost;
let bus: Bus;
let inspector: BrokerInspector;
let admin: ChannelModel;
const consumers: Consumer[] = [];

beforeEach(async () => {
  vhost = await createTestVhost();
  bus = await connectBus({
    topology: "declare",
    url: vhost.url,
    name: "quorum-test",
    keys: testKeys("billing-ledger"),
    reconnect: { initialDelayMs: 50, maxDelayMs: 500 },
  });
  inspector = await openInspector(vhost.url);
  admin = await connect(vhost.url);
  admin.on("error", () => undefined);
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  await bus?.close();
  await inspector?.close();
  await admin?.close().catch(() => undefined);
  await vhost?.drop();
});

const revoked = () => ({ version: "v1" as const, key_id: randomUUID() });
const queueName = () => `test.${randomUUID().slice(0, 8)}`;

async function queueTypes(): Promise<Record<string, string>> {
  const { stdout } = await run(process.env.RABBITMQCTL ?? "rabbitmqctl", ["--quiet", "list_queues", "-p", vhost.name, "name", "type", "--no-table-headers"]);
  return Object.fromEntries(
    stdout
      .trim()
      .split("\n")
      .map((line) => line.trim().split(/\s+/) as [string, string]),
  );
}

/** A consumer process killed while handling a message: it takes one delivery and its channel dies unsettled. */
async function crashOnce(queue: string): Promise<boolean> {
  const channel = await admin.createChannel();
  channel.on("error", () => undefined);
  await channel.prefetch(1);
  const got = new Promise<boolean>((resolve) => {
    void channel.consume(queue, (message) => resolve(message !== null));
  });
  const delivered = await Promise.race([got, sleep(2_000).then(() => false)]);
  await channel.close().catch(() => undefined);
  return delivered;
}

test("every durable queue of a consumer is a quorum queue; an exclusive one stays classic", async () => {
  const queue = queueName();
  consumers.push(
    await bus.consume({ queue, routingKeys: ["billing.key.revoked"], retry: { maxAttempts: 3, backoffMs: [50, 100] }, handler: async () => undefined }),
  );
  consumers.push(await bus.consume({ queue: "gateway.key-revoked", exclusive: true, routingKeys: ["billing.key.revoked"], handler: async () => undefined }));
  const types = await queueTypes();
  expect(types[queue]).toBe("quorum");
  expect(types[`${queue}.dlq`]).toBe("quorum");
  expect(types[`${queue}.delay.50`]).toBe("quorum");
  expect(types[`${queue}.delay.100`]).toBe("quorum");
  expect(
    Object.entries(types)
      .filter(([name]) => name.startsWith("gateway.key-revoked."))
      .map(([, type]) => type),
  ).toEqual(["classic"]);
});

test("a message that kills its consumer every time ends in the dead-letter queue after the delivery limit; replayed, it is processed once", async () => {
  const queue = queueName();
  const handled: string[] = [];
  const declaring = await bus.consume({ queue, routingKeys: ["billing.key.revoked"], handler: async () => undefined });
  await declaring.stop();
  const messageId = await bus.publish("billing.key.revoked", revoked());

  let deliveries = 0;
  while (await crashOnce(queue)) deliveries++;
  expect(deliveries).toBe(DELIVERY_LIMIT + 1);
  expect(await inspector.messageCount(queue)).toBe(0);
  await eventually(async () => expect(await inspector.messageCount(`${queue}.dlq`)).toBe(1));
  expect(await showDeadLetters(admin, queue, 10)).toEqual([
    expect.objectContaining({ messageId, routingKey: "billing.key.revoked", reason: "delivery_limit" }),
  ]);

  consumers.push(await bus.consume({ queue, routingKeys: ["billing.key.revoked"], handler: async (_payload, meta) => void handled.push(meta.messageId) }));
  expect(await replayDeadLetters(admin, queue)).toBe(1);
  await eventually(() => expect(handled).toEqual([messageId]));
  await sleep(300);
  expect(handled).toEqual([messageId]);
  expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
});

test("a message its handler refused is counted on /metrics, replayed as a first attempt and processed once", async () => {
  const queue = queueName();
  const calls: { messageId: string; attempt: number }[] = [];
  let refuse = true;
  const registry = new Registry();
  const metered = await connectBus({ topology: "declare", url: vhost.url, name: "quorum-metrics-test", keys: testKeys("billing-ledger"), registry });
  consumers.push(
    await metered.consume({
      queue,
      routingKeys: ["billing.key.revoked"],
      handler: async (_payload, meta) => {
        calls.push({ messageId: meta.messageId, attempt: meta.attempt });
        if (refuse) throw new NonRetryableError("the ledger said no");
      },
    }),
  );
  const messageId = await bus.publish("billing.key.revoked", revoked());
  await eventually(async () => expect(await inspector.messageCount(`${queue}.dlq`)).toBe(1));
  expect(await showDeadLetters(admin, queue, 10)).toEqual([expect.objectContaining({ messageId, reason: "non-retryable", error: "the ledger said no" })]);
  // show leaves the message where it was.
  // (A quorum queue takes back what show returned a moment after show's channel closes.)
  await eventually(async () => expect(await inspector.messageCount(`${queue}.dlq`)).toBe(1));
  await eventually(async () => expect(await registry.metrics()).toContain(`${DEAD_LETTER_METRIC}{queue="${queue}"} 1`));

  refuse = false;
  expect(await replayDeadLetters(admin, queue)).toBe(1);
  await eventually(() => expect(calls).toHaveLength(2));
  await sleep(300);
  expect(calls).toEqual([
    { messageId, attempt: 1 },
    { messageId, attempt: 1 },
  ]);
  expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
  expect(await registry.metrics()).toContain(`${DEAD_LETTER_METRIC}{queue="${queue}"} 0`);
  await consumers.pop()?.stop();
  await metered.close();
});

test("a dead-letter queue keeps at most its bound, dropping the oldest", async () => {
  const queue = queueName();
  consumers.push(await bus.consume({ queue, routingKeys: ["billing.key.revoked"], handler: async () => undefined }));
  const channel = await admin.createConfirmChannel();
  const extra = 5;
  for (let i = 0; i < DEAD_LETTER_QUEUE_MAX_LENGTH + extra; i++) channel.publish(`${queue}.moves`, `${queue}.dlq`, Buffer.from("{}"), { messageId: `m-${i}` });
  await channel.waitForConfirms();
  await channel.close();
  await eventually(async () => expect(await inspector.messageCount(`${queue}.dlq`)).toBe(DEAD_LETTER_QUEUE_MAX_LENGTH));
  expect((await inspector.take(`${queue}.dlq`))?.properties.messageId).toBe(`m-${extra}`);
});

test("an install whose queues are classic is moved to quorum queues by the consumer's start, as its own broker user, its messages kept", async () => {
  const { queue, routingKeys } = CommandQueues.filesVerification;
  const delay = `${queue}.delay.50`;
  // What the previous release declared (topology.ts at 58b2b91), with messages waiting in it.
  const old = await admin.createChannel();
  await old.assertExchange("meter", "topic", { durable: true, alternateExchange: "meter.unrouted" });
  await old.assertQueue(`${queue}.dlq`, { durable: true });
  await old.assertQueue(queue, { durable: true });
  await old.bindQueue(queue, "meter", routingKeys[0]);
  await old.assertExchange(`${queue}.moves`, "direct", { durable: true });
  await old.bindQueue(queue, `${queue}.moves`, queue);
  await old.bindQueue(`${queue}.dlq`, `${queue}.moves`, `${queue}.dlq`);
  // Its TTL long enough that the retry put in it still waits there when the new release starts.
  await old.assertQueue(delay, { durable: true, messageTtl: 3_600_000, deadLetterExchange: `${queue}.moves`, deadLetterRoutingKey: queue });
  await old.bindQueue(delay, `${queue}.moves`, delay);
  await old.close();
  const files = await connectBus({ topology: "declare", url: vhost.url, name: "quorum-files-test", keys: testKeys("files") });
  const upload = () => ({ version: "v1" as const, file_id: randomUUID() });
  try {
    // The previous release's consumer had moved one to its delay queue, and dead-lettered another.
    const retried = await files.publish(routingKeys[0], upload());
    const moved = await inspector.take(queue);
    expect(moved?.properties.messageId).toBe(retried);
    await inspector.publishRaw(`${queue}.moves`, delay, moved!.content.toString(), {
      ...moved!.properties,
      headers: { ...moved!.properties.headers, "x-routing-key": routingKeys[0], "x-attempt": 2 },
    });
    await inspector.publishRaw(`${queue}.moves`, `${queue}.dlq`, "{}", { messageId: "dead-before" });
    const waiting = [await files.publish(routingKeys[0], upload()), await files.publish(routingKeys[0], upload())];
    expect(await inspector.messageCount(queue)).toBe(2);
    expect(await inspector.messageCount(delay)).toBe(1);

    const own = await connectBus({
      topology: "await",
      url: (await vhost.deployableUrls())["files-worker"],
      name: "files-worker",
      keys: testKeys("files-worker"),
    });
    const handled: string[] = [];
    try {
      consumers.push(
        await own.consume({
          queue,
          routingKeys,
          retry: { maxAttempts: 3, backoffMs: [50] },
          handler: async (_payload, meta) => void handled.push(meta.messageId),
        }),
      );
      const after = await files.publish(routingKeys[0], upload());
      await eventually(() => expect([...handled].sort()).toEqual([...waiting, retried, after].sort()));
      await consumers.pop()?.stop();
    } finally {
      await own.close();
    }
  } finally {
    await files.close();
  }

  const types = await queueTypes();
  expect(types[queue]).toBe("quorum");
  expect(types[`${queue}.dlq`]).toBe("quorum");
  expect(types[`${queue}.delay.50`]).toBe("quorum");
  expect(Object.keys(types).filter((name) => name.endsWith(".moving"))).toEqual([]);
  expect((await inspector.take(`${queue}.dlq`))?.properties.messageId).toBe("dead-before");
});
