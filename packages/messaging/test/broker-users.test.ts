import { randomUUID } from "node:crypto";
import { BUS_DEPLOYABLES, BusExchanges, CommandQueues, TOPOLOGY_OWNER, type BusDeployable } from "@meter/contracts";
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
  // The topology's owner first, as on any broker it ran on: the others only find its exchanges.
  await busOf(TOPOLOGY_OWNER);
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await Promise.all(buses.map((b) => b.close()));
  await vhost?.drop();
});

async function busOf(deployable: BusDeployable): Promise<Bus> {
  const topology = deployable === TOPOLOGY_OWNER ? "declare" : "await";
  const bus = await connectBus({ url: urls[deployable], name: deployable, topology, keys: testKeys(deployable), connectTimeoutMs: 10_000 });
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

/** Runs operations as the user on one connection, a channel each (a refused one closes its channel); each one's refusal, or null when it did it. */
async function refusalsAs(deployable: BusDeployable, operations: ((channel: Channel) => Promise<unknown>)[]): Promise<(string | null)[]> {
  const connection = await connect(urls[deployable]);
  connection.on("error", () => undefined);
  try {
    const out: (string | null)[] = [];
    for (const operation of operations) {
      const channel = await connection.createChannel();
      channel.on("error", () => undefined);
      out.push(
        await operation(channel).then(
          () => null,
          (err: Error) => err.message,
        ),
      );
      await channel.close().catch(() => undefined);
    }
    return out;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

test("no user but its owner may delete, redeclare or purge an exchange or a queue: the topology's, and every consumer's; commands still reach them", async () => {
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
  consumers.push(await (await busOf("media-jobs-worker")).consume({ ...CommandQueues.mediaJobs, handler: async () => undefined }));
  consumers.push(await (await busOf("files-worker")).consume({ ...CommandQueues.filesVerification, handler: async () => undefined }));

  type Owned = { kind: "exchange" | "queue"; name: string; owner: BusDeployable };
  const consumersOf: [string, BusDeployable][] = [
    [CommandQueues.billingHoldCommands.queue, "billing-ledger"],
    [CommandQueues.mediaJobs.queue, "media-jobs-worker"],
    [CommandQueues.filesVerification.queue, "files-worker"],
  ];
  const owned: Owned[] = [
    { kind: "exchange", name: BusExchanges.main, owner: TOPOLOGY_OWNER },
    { kind: "exchange", name: BusExchanges.unrouted, owner: TOPOLOGY_OWNER },
    { kind: "queue", name: BusExchanges.unrouted, owner: TOPOLOGY_OWNER },
    ...consumersOf.flatMap(([queue, owner]): Owned[] => [
      { kind: "queue", name: queue, owner },
      { kind: "queue", name: `${queue}.dlq`, owner },
      { kind: "exchange", name: `${queue}.moves`, owner },
    ]),
  ];
  const destructive = (o: Owned): Record<string, (c: Channel) => Promise<unknown>> =>
    o.kind === "exchange"
      ? {
          // A plain delete drops every binding; "if unused" must be refused too, not answered 406 "in use".
          delete: (c) => c.deleteExchange(o.name),
          deleteIfUnused: (c) => c.deleteExchange(o.name, { ifUnused: true }),
          redeclare: (c) => c.assertExchange(o.name, "topic", { durable: false, autoDelete: true }),
        }
      : {
          delete: (c) => c.deleteQueue(o.name),
          deleteIfEmpty: (c) => c.deleteQueue(o.name, { ifEmpty: true, ifUnused: true }),
          redeclare: (c) => c.assertQueue(o.name, { durable: false, autoDelete: true }),
          purge: (c) => c.purgeQueue(o.name),
        };
  const refused = "403 (ACCESS-REFUSED)";
  const outcomes: string[] = [];
  for (const user of BUS_DEPLOYABLES) {
    const theirs = owned.filter((o) => o.owner !== user);
    const calls = theirs.flatMap((o) => Object.entries(destructive(o)).map(([what, call]) => ({ label: `${user} ${what} ${o.kind} ${o.name}`, call })));
    const answers = await refusalsAs(
      user,
      calls.map((c) => c.call),
    );
    answers.forEach((answer, i) => outcomes.push(`${calls[i]!.label}: ${answer?.includes(refused) ? "refused" : (answer ?? "done")}`));
  }
  expect(outcomes.filter((o) => !o.endsWith(": refused"))).toEqual([]);
  expect(outcomes.length).toBeGreaterThan(200);

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
