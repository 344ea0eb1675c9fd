import { randomUUID } from "node:crypto";
import { CommandQueues, type BusDeployable } from "@meter/contracts";
import type { Channel } from "amqplib";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connect } from "amqplib";
import { connectBus, type Bus, type Consumer, type MessageMeta } from "../src";
import { eventually } from "./support/waiting";

/**
 * The broker users the project's own setup code makes (local-infra's ensureBrokerUsers, what npm start
 * and startSystemUnderTest run): each deployable can do what its process does, and the broker itself
 * refuses the rest.
 */
let vhost: TestVhost;
let urls: Record<BusDeployable, string>;
const buses: Bus[] = [];
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  urls = await vhost.deployableUrls();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await Promise.all(buses.map((b) => b.close()));
  await vhost?.drop();
});

async function busOf(deployable: BusDeployable): Promise<Bus> {
  const bus = await connectBus({ url: urls[deployable], name: deployable, keys: testKeys(deployable), connectTimeoutMs: 10_000 });
  buses.push(bus);
  return bus;
}

/** Publishes with a plain channel as the user; resolves with the broker's refusal (or null when it took the message). */
async function publishAs(deployable: BusDeployable, exchange: string, routingKey: string): Promise<string | null> {
  const connection = await connect(urls[deployable]);
  try {
    const channel = await connection.createConfirmChannel();
    const refused = new Promise<string>((resolve) => channel.once("error", (err: Error) => resolve(err.message)));
    channel.publish(exchange, routingKey, Buffer.from("{}"), { messageId: randomUUID() });
    return await Promise.race([channel.waitForConfirms().then(() => null), refused]);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

test("each deployable's user does what its process does: declare, publish, consume, retry through a delay queue", async () => {
  const billing = await busOf("billing-ledger");
  const seen: MessageMeta[] = [];
  consumers.push(
    await billing.consume({
      ...CommandQueues.billingHoldCommands,
      retry: { maxAttempts: 3, backoffMs: [100] },
      handler: async (_payload, meta) => {
        seen.push(meta);
        if (meta.attempt === 1) throw new Error("the ledger is busy");
      },
    }),
  );
  const text = await busOf("text");
  text.requireQueue(CommandQueues.billingHoldCommands);
  const messageId = await text.publish("billing.hold.settle", { version: "v1", hold_id: randomUUID(), amount_microrub: 10 });
  await eventually(() =>
    expect(seen.map((m) => [m.messageId, m.attempt])).toEqual([
      [messageId, 1],
      [messageId, 2],
    ]),
  );

  const worker = await busOf("files-worker");
  const verified: string[] = [];
  consumers.push(
    await worker.consume({
      ...CommandQueues.filesVerification,
      handler: async (payload) => {
        verified.push(payload.file_id);
      },
    }),
  );
  const files = await busOf("files");
  files.requireQueue(CommandQueues.filesVerification);
  const fileId = randomUUID();
  await files.publish("files.upload.completed", { version: "v1", file_id: fileId });
  await eventually(() => expect(verified).toEqual([fileId]));

  // The gateway hears revocations on a queue of its own.
  const gateway = await busOf("gateway");
  const revoked: string[] = [];
  consumers.push(
    await gateway.consume({
      queue: "gateway.key-revoked.test",
      exclusive: true,
      routingKeys: ["billing.key.revoked"],
      handler: async (payload) => {
        revoked.push(payload.key_id);
      },
    }),
  );
  const keyId = randomUUID();
  await billing.publish("billing.key.revoked", { version: "v1", key_id: keyId });
  await eventually(() => expect(revoked).toEqual([keyId]));
});

/** Runs one operation as the user on a channel of its own; resolves with the broker's refusal (or null when it did it). */
async function refusalAs(deployable: BusDeployable, operation: (channel: Channel) => Promise<unknown>): Promise<string | null> {
  const connection = await connect(urls[deployable]);
  try {
    const channel = await connection.createChannel();
    channel.on("error", () => undefined);
    return await operation(channel).then(
      () => null,
      (err: Error) => err.message,
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

test("a producer cannot delete, declare or purge the queues it publishes to, and its commands still reach them", async () => {
  const billing = await busOf("billing-ledger");
  const seen: string[] = [];
  consumers.push(
    await billing.consume({
      ...CommandQueues.billingHoldCommands,
      handler: async (_payload, meta) => {
        seen.push(meta.messageId);
      },
    }),
  );
  const worker = await busOf("media-jobs-worker");
  consumers.push(await worker.consume({ ...CommandQueues.mediaJobs, handler: async () => undefined }));
  const theirs: [BusDeployable, string][] = [
    ...(["text", "media-jobs", "media-jobs-worker"] as const).flatMap((d): [BusDeployable, string][] => [
      [d, CommandQueues.billingHoldCommands.queue],
      [d, `${CommandQueues.billingHoldCommands.queue}.dlq`],
    ]),
    ["media-jobs", CommandQueues.mediaJobs.queue],
    ["files", CommandQueues.filesVerification.queue],
  ];
  const refused = expect.stringMatching(/403 \(ACCESS-REFUSED\)/);
  for (const [producer, queue] of theirs) {
    const outcomes = {
      // Unconditional: with configure on it, a delete would take the queue and every command waiting in it.
      delete: await refusalAs(producer, (c) => c.deleteQueue(queue)),
      declare: await refusalAs(producer, (c) => c.assertQueue(queue, { durable: true })),
      purge: await refusalAs(producer, (c) => c.purgeQueue(queue)),
    };
    expect({ producer, queue, ...outcomes }).toEqual({ producer, queue, delete: refused, declare: refused, purge: refused });
  }

  // Publishing to the exchange still reaches billing's queue, from each of its producers.
  const sent: string[] = [];
  for (const producer of ["text", "media-jobs", "media-jobs-worker"] as const) {
    const bus = await busOf(producer);
    bus.requireQueue(CommandQueues.billingHoldCommands);
    sent.push(await bus.publish("billing.hold.release", { version: "v1", hold_id: randomUUID(), reason: "test" }));
  }
  await eventually(() => expect([...seen].sort()).toEqual([...sent].sort()));
  expect(await billing.unroutedMessageCount()).toBe(0);
});

test("the broker refuses what a deployable's process never does", async () => {
  // The workers that parse untrusted files cannot move money or lock keys out.
  expect(await publishAs("files-worker", "meter", "billing.hold.release")).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("files-worker", "meter", "billing.hold.settle")).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("files-worker", "meter", "billing.key.revoked")).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("media-jobs-worker", "meter", "billing.key.revoked")).toMatch(/ACCESS_REFUSED/);
  // The gateway only listens; text only sends hold commands.
  expect(await publishAs("gateway", "meter", "billing.key.revoked")).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("text", "meter", "billing.key.revoked")).toMatch(/ACCESS_REFUSED/);
  // Nobody can put a message straight on a queue through the default exchange, consumers with retries
  // included: each moves copies through its own exchange, which reaches its own queues only.
  expect(await publishAs("text", "", CommandQueues.billingHoldCommands.queue)).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("files-worker", "", CommandQueues.billingHoldCommands.queue)).toMatch(/ACCESS_REFUSED/);
  expect(await publishAs("files-worker", "billing-ledger.hold-commands.moves", CommandQueues.billingHoldCommands.queue)).toMatch(/ACCESS_REFUSED/);
  // And what each one does send, it may.
  expect(await publishAs("text", "meter", "billing.hold.release")).toBeNull();

  // Nobody but billing-ledger reads its command queue.
  const connection = await connect(urls["files-worker"]);
  try {
    const channel = await connection.createChannel();
    const refused = new Promise<string>((resolve) => channel.once("error", (err: Error) => resolve(err.message)));
    await expect(channel.consume(CommandQueues.billingHoldCommands.queue, () => undefined)).rejects.toThrow(/ACCESS_REFUSED/);
    expect(await refused).toMatch(/ACCESS_REFUSED/);
  } finally {
    await connection.close().catch(() => undefined);
  }
});
