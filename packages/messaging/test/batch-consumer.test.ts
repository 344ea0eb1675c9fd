import { randomUUID } from "node:crypto";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, MessageHeaders, NonRetryableError, type BatchItem, type BatchOutcome, type Bus, type Consumer } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually, sleep } from "./support/waiting";

let vhost: TestVhost;
let bus: Bus;
let inspector: BrokerInspector;
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  bus = await connectBus({ topology: "declare", url: vhost.url, name: "batch-test", keys: testKeys("text") });
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

const queueName = () => `batch.${randomUUID().slice(0, 8)}`;
const settle = (amount: number) => ({ version: "v1" as const, hold_id: randomUUID(), amount_microrub: amount });

test("the batch handler gets what has arrived, up to maxBatch, and each item is acked, retried or dead-lettered by its outcome", async () => {
  const queue = queueName();
  const retry = { maxAttempts: 3, backoffMs: [100] };
  // Its consumer has run before (queues are declared by their consumer only): what is published next waits for it.
  await (await bus.consumeBatch({ queue, routingKeys: ["billing.hold.settle"], maxBatch: 5, retry, handler: async () => [] })).stop();
  // amount % 3: 0 succeeds, 1 fails once then succeeds, 2 cannot be applied at all.
  const ids = new Map<string, number>();
  for (let amount = 0; amount < 12; amount++) ids.set(await bus.publish("billing.hold.settle", settle(amount)), amount);

  const batches: BatchItem<"billing.hold.settle">[][] = [];
  const applied: number[] = [];
  consumers.push(
    await bus.consumeBatch({
      queue,
      routingKeys: ["billing.hold.settle"],
      maxBatch: 5,
      retry,
      handler: async (items) => {
        batches.push(items);
        // Busy with the first batch long enough for the rest of the twelve to arrive meanwhile.
        if (batches.length === 1) await sleep(300);
        return items.map(({ payload, meta }): BatchOutcome => {
          const kind = payload.amount_microrub % 3;
          if (kind === 2) return { ok: false, error: new NonRetryableError("hold is closed") };
          if (kind === 1 && meta.attempt === 1) return { ok: false, error: new Error("deadlock, try again") };
          applied.push(payload.amount_microrub);
          return { ok: true };
        });
      },
    }),
  );

  await eventually(() => expect([...applied].sort((a, b) => a - b)).toEqual([0, 1, 3, 4, 6, 7, 9, 10]));
  // How many arrive together at first depends on the socket; what arrived during the first batch is
  // taken five at a time, never more.
  expect(Math.max(...batches.map((b) => b.length))).toBe(5);
  expect(batches[1]).toHaveLength(5);
  const retried = batches.flat().filter((item) => item.meta.attempt === 2);
  expect(retried.map((item) => item.payload.amount_microrub).sort((a, b) => a - b)).toEqual([1, 4, 7, 10]);

  const dead: number[] = [];
  for (let i = 0; i < 4; i++) {
    const message = await eventually(async () => {
      const m = await inspector.take(`${queue}.dlq`);
      if (!m) throw new Error("dead letter not there yet");
      return m;
    });
    expect(message.properties.headers?.[MessageHeaders.deadReason]).toBe("non-retryable");
    dead.push(ids.get(message.properties.messageId as string) ?? -1);
  }
  expect(dead.sort((a, b) => a - b)).toEqual([2, 5, 8, 11]);
  await sleep(150);
  expect(await inspector.messageCount(queue)).toBe(0);
  expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
});

test("an idle batch consumer handles a lone message at once instead of waiting to fill a batch", async () => {
  const queue = queueName();
  const sizes: number[] = [];
  let handledAt = 0;
  consumers.push(
    await bus.consumeBatch({
      queue,
      routingKeys: ["billing.hold.settle"],
      maxBatch: 100,
      handler: async (items) => {
        sizes.push(items.length);
        handledAt = Date.now();
        return items.map(() => ({ ok: true }));
      },
    }),
  );
  const sentAt = Date.now();
  await bus.publish("billing.hold.settle", settle(1));
  await eventually(() => expect(sizes).toEqual([1]), 2_000, 2);
  expect(handledAt - sentAt).toBeLessThan(500);
});

test("a batch handler that throws retries every item in the batch", async () => {
  const queue = queueName();
  let calls = 0;
  const done: number[] = [];
  consumers.push(
    await bus.consumeBatch({
      queue,
      routingKeys: ["billing.hold.settle"],
      maxBatch: 10,
      retry: { maxAttempts: 2, backoffMs: [50] },
      handler: async (items) => {
        calls++;
        if (items.some((item) => item.meta.attempt === 1)) throw new Error("database down");
        done.push(...items.map((item) => item.payload.amount_microrub));
        return items.map(() => ({ ok: true }));
      },
    }),
  );
  await Promise.all([bus.publish("billing.hold.settle", settle(10)), bus.publish("billing.hold.settle", settle(20))]);
  await eventually(() => expect(done.sort((a, b) => a - b)).toEqual([10, 20]));
  expect(calls).toBeGreaterThanOrEqual(2);
});

test("stop waits for the batch under way and leaves nothing unacked", async () => {
  const queue = queueName();
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let started = false;
  const consumer = await bus.consumeBatch({
    queue,
    routingKeys: ["billing.hold.settle"],
    maxBatch: 10,
    handler: async (items) => {
      started = true;
      await gate;
      return items.map(() => ({ ok: true }));
    },
  });
  await bus.publish("billing.hold.settle", settle(5));
  await eventually(() => expect(started).toBe(true));
  let stopped = false;
  const stopping = consumer.stop().then(() => (stopped = true));
  await sleep(100);
  expect(stopped).toBe(false);
  release();
  await stopping;
  expect(await inspector.messageCount(queue)).toBe(0);
});
