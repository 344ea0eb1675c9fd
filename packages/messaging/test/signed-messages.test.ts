import { randomUUID } from "node:crypto";
import { Registry } from "prom-client";
import type { Deployable, RoutingKey } from "@meter/contracts";
import { generateInternalKeySet, parseInternalKeys } from "@meter/service-kit";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, DEAD_LETTERED_METRIC, MessageHeaders, MessageSeal, REFUSED_METRIC, signMessage, type Bus, type Consumer, type MessageMeta } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually } from "./support/waiting";

let vhost: TestVhost;
let billing: Bus;
let text: Bus;
/** Text publishing with BUS_COMMAND_SIGN=mac: its commands carry a MAC for billing-ledger instead of a signature. */
let textMac: Bus;
let inspector: BrokerInspector;
const registry = new Registry();
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  // The consuming side reports refusals on its registry, as a service's /metrics does.
  billing = await connectBus({ topology: "declare", url: vhost.url, name: "billing-ledger", keys: testKeys("billing-ledger"), registry });
  text = await connectBus({ topology: "declare", url: vhost.url, name: "text", keys: testKeys("text") });
  textMac = await connectBus({ topology: "declare", url: vhost.url, name: "text", keys: testKeys("text"), commandSign: "mac" });
  inspector = await openInspector(vhost.url);
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
});

afterAll(async () => {
  await Promise.all([billing?.close(), text?.close(), textMac?.close(), inspector?.close()]);
  await vhost?.drop();
});

const queueName = () => `signed.${randomUUID().slice(0, 8)}`;
const release = () => ({ version: "v1" as const, hold_id: randomUUID(), reason: "customer cancelled" });

/** A consumer of the hold commands on its own queue, recording what its handler was given. */
async function holdCommands(queue: string, retry?: { maxAttempts: number; backoffMs: number[] }) {
  const seen: MessageMeta[] = [];
  consumers.push(
    await billing.consume({
      queue,
      routingKeys: ["billing.hold.settle", "billing.hold.release"],
      ...(retry ? { retry } : {}),
      handler: async (_payload, meta) => {
        seen.push(meta);
        if (retry && meta.attempt === 1) throw new Error("the ledger is busy");
      },
    }),
  );
  return seen;
}

/** Publishes bytes of our choosing to the exchange, signed (or not) by whom the test says. */
async function handMade(
  routingKey: RoutingKey,
  content: string,
  options: { signer?: Deployable; keys?: ReturnType<typeof testKeys>; signedContent?: string; messageId?: string; mac?: boolean } = {},
) {
  const messageId = options.messageId ?? randomUUID();
  const keys = options.keys ?? (options.signer ? testKeys(options.signer) : undefined);
  const signed = { routingKey, messageId, body: Buffer.from(options.signedContent ?? content) };
  const headers = keys ? (options.mac ? new MessageSeal(keys, "mac").sign(signed) : signMessage(keys, signed)) : {};
  await inspector.publishRaw("meter", routingKey, content, { messageId, contentType: "application/json", headers });
  return messageId;
}

async function deadLetters(queue: string, count: number) {
  const found: Record<string, unknown>[] = [];
  await eventually(async () => {
    const message = await inspector.take(`${queue}.dlq`);
    if (message) found.push({ id: message.properties.messageId, ...message.properties.headers });
    expect(found).toHaveLength(count);
  });
  return new Map(found.map((h) => [h.id as string, h]));
}

/** What the dead-letter alert reads (k8s/components/prometheus/prometheus-rule.yaml). */
async function deadLetteredCount(queue: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === DEAD_LETTERED_METRIC);
  return (metric?.values ?? []).filter((v) => v.labels.queue === queue).reduce((sum, v) => sum + v.value, 0);
}

async function refusedCount(routingKey: string, reason: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === REFUSED_METRIC);
  const value = (metric?.values ?? []).find((v) => v.labels.routing_key === routingKey && v.labels.reason === reason);
  return value?.value ?? 0;
}

test("a hold command from its producer reaches the handler, with the producer its signature proves", async () => {
  const queue = queueName();
  const seen = await holdCommands(queue);
  const messageId = await text.publish("billing.hold.release", release());
  await eventually(() => expect(seen).toHaveLength(1));
  expect(seen[0]).toMatchObject({ messageId, routingKey: "billing.hold.release", producer: "text" });
});

test("unsigned, forbidden, tampered and stranger-signed hold commands are dead-lettered, never handled, and counted", async () => {
  const queue = queueName();
  const seen = await holdCommands(queue);
  const before = {
    unsigned: await refusedCount("billing.hold.release", "unsigned"),
    forbidden: await refusedCount("billing.hold.release", "forbidden-producer"),
    bad: await refusedCount("billing.hold.settle", "bad-signature"),
  };
  const body = JSON.stringify(release());
  const settle = { version: "v1", hold_id: randomUUID(), amount_microrub: 0 };
  // A deployable outside the catalog's producers of the key, with a valid signature of its own.
  const forbidden = await handMade("billing.hold.release", body, { signer: "files-worker" });
  const unsigned = await handMade("billing.hold.release", body);
  // Text signed a settle of 1500; the body on the wire says 0.
  const tampered = await handMade("billing.hold.settle", JSON.stringify(settle), {
    signer: "text",
    signedContent: JSON.stringify({ ...settle, amount_microrub: 1_500 }),
  });
  // Signed as "text" with a key that INTERNAL_PUBLIC_KEYS does not list.
  const stranger = generateInternalKeySet();
  const strangerSigned = await handMade("billing.hold.settle", JSON.stringify(settle), {
    keys: parseInternalKeys("text", stranger.signingKeys.text, stranger.publicKeys),
  });

  const dead = await deadLetters(queue, 4);
  expect(dead.get(forbidden)?.[MessageHeaders.deadReason]).toBe("forbidden-producer");
  expect(String(dead.get(forbidden)?.[MessageHeaders.deadError])).toContain("files-worker may not publish billing.hold.release");
  expect(dead.get(unsigned)?.[MessageHeaders.deadReason]).toBe("unsigned");
  expect(dead.get(tampered)?.[MessageHeaders.deadReason]).toBe("bad-signature");
  expect(dead.get(strangerSigned)?.[MessageHeaders.deadReason]).toBe("bad-signature");
  expect(seen).toEqual([]);
  expect(await refusedCount("billing.hold.release", "unsigned")).toBe(before.unsigned + 1);
  expect(await refusedCount("billing.hold.release", "forbidden-producer")).toBe(before.forbidden + 1);
  expect(await refusedCount("billing.hold.settle", "bad-signature")).toBe(before.bad + 2);
  expect(await deadLetteredCount(queue)).toBe(4);
});

test("a retried message is checked again on its way back from the delay queue, and still accepted", async () => {
  const queue = queueName();
  const seen = await holdCommands(queue, { maxAttempts: 3, backoffMs: [100] });
  const messageId = await text.publish("billing.hold.release", release());
  await eventually(() => expect(seen.map((m) => m.attempt)).toEqual([1, 2]));
  expect(seen[1]).toMatchObject({ messageId, routingKey: "billing.hold.release", producer: "text" });
  expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
});

test("a signed message put straight on a queue under a forged original routing key is refused", async () => {
  const queue = queueName();
  const seen = await holdCommands(queue);
  // Text really signed this settle; sent to the queue as if a delay queue were handing back a release.
  const content = JSON.stringify({ version: "v1", hold_id: randomUUID(), amount_microrub: 10 });
  const messageId = randomUUID();
  const headers = {
    ...signMessage(testKeys("text"), { routingKey: "billing.hold.settle", messageId, body: Buffer.from(content) }),
    [MessageHeaders.routingKey]: "billing.hold.release",
    [MessageHeaders.attempt]: 2,
  };
  await inspector.publishRaw("", queue, content, { messageId, headers });

  const dead = await deadLetters(queue, 1);
  expect(dead.get(messageId)?.[MessageHeaders.deadReason]).toBe("bad-signature");
  expect(seen).toEqual([]);
});

test("a signed message sent again is delivered again with the same id, for the consumer to deduplicate on", async () => {
  const queue = queueName();
  const seen = await holdCommands(queue);
  const messageId = randomUUID();
  const payload = release();
  await text.publish("billing.hold.release", payload, { messageId });
  await text.publish("billing.hold.release", payload, { messageId });
  await eventually(() => expect(seen).toHaveLength(2));
  expect(seen.map((m) => m.messageId)).toEqual([messageId, messageId]);
});

describe("hold commands sealed with a MAC for billing-ledger (BUS_COMMAND_SIGN=mac)", () => {
  test("reach the handler with the producer the MAC proves, and a retry is checked again", async () => {
    const queue = queueName();
    const seen = await holdCommands(queue, { maxAttempts: 3, backoffMs: [100] });
    const messageId = await textMac.publish("billing.hold.release", release());
    await eventually(() => expect(seen.map((m) => m.attempt)).toEqual([1, 2]));
    expect(seen[1]).toMatchObject({ messageId, routingKey: "billing.hold.release", producer: "text" });
    expect(await inspector.messageCount(`${queue}.dlq`)).toBe(0);
  });

  test("carry a MAC, not a signature, while events stay signed for every reader", () => {
    const seal = new MessageSeal(testKeys("text"), "mac");
    const body = Buffer.from("{}");
    expect(seal.sign({ routingKey: "billing.hold.settle", messageId: "m", body })[MessageHeaders.signature]).toMatch(/^v2;billing-ledger-[^=]+=/);
    const event = new MessageSeal(testKeys("billing-ledger"), "mac").sign({ routingKey: "billing.key.revoked", messageId: "m", body });
    expect(event[MessageHeaders.signature]).not.toMatch(/^v2;/);
  });

  test("forged, altered, stranger-sealed and misaddressed ones are dead-lettered, never handled", async () => {
    const queue = queueName();
    const seen = await holdCommands(queue);
    const body = JSON.stringify(release());
    const settle = { version: "v1", hold_id: randomUUID(), amount_microrub: 0 };
    // files-worker's MAC for billing-ledger is valid, but it may not publish hold commands.
    const forbidden = await handMade("billing.hold.release", body, { signer: "files-worker", mac: true });
    // Text sealed a settle of 1500; the body on the wire says 0.
    const altered = await handMade("billing.hold.settle", JSON.stringify(settle), {
      signer: "text",
      mac: true,
      signedContent: JSON.stringify({ ...settle, amount_microrub: 1_500 }),
    });
    // Sealed as "text" under a key that INTERNAL_PUBLIC_KEYS does not list.
    const stranger = generateInternalKeySet();
    const strangerSealed = await handMade("billing.hold.settle", JSON.stringify(settle), {
      keys: parseInternalKeys("text", stranger.signingKeys.text, stranger.publicKeys),
      mac: true,
    });
    // The gateway's own MAC for billing-ledger, presented under text's name and kid.
    const messageId = randomUUID();
    const gatewaySeal = new MessageSeal(testKeys("gateway"), "mac").sign({
      routingKey: "billing.hold.settle",
      messageId,
      body: Buffer.from(JSON.stringify(settle)),
    });
    await inspector.publishRaw("meter", "billing.hold.settle", JSON.stringify(settle), {
      messageId,
      contentType: "application/json",
      headers: { ...gatewaySeal, [MessageHeaders.producer]: "text", [MessageHeaders.keyId]: testKeys("text").signing.kid },
    });

    const dead = await deadLetters(queue, 4);
    expect(dead.get(forbidden)?.[MessageHeaders.deadReason]).toBe("forbidden-producer");
    expect(dead.get(altered)?.[MessageHeaders.deadReason]).toBe("bad-signature");
    expect(dead.get(strangerSealed)?.[MessageHeaders.deadReason]).toBe("bad-signature");
    expect(dead.get(messageId)?.[MessageHeaders.deadReason]).toBe("bad-signature");
    expect(seen).toEqual([]);
  });

  test("one put straight on a queue under a forged original routing key is refused", async () => {
    const queue = queueName();
    const seen = await holdCommands(queue);
    const content = JSON.stringify({ version: "v1", hold_id: randomUUID(), amount_microrub: 10 });
    const messageId = randomUUID();
    const headers = {
      ...new MessageSeal(testKeys("text"), "mac").sign({ routingKey: "billing.hold.settle", messageId, body: Buffer.from(content) }),
      [MessageHeaders.routingKey]: "billing.hold.release",
      [MessageHeaders.attempt]: 2,
    };
    await inspector.publishRaw("", queue, content, { messageId, headers });
    const dead = await deadLetters(queue, 1);
    expect(dead.get(messageId)?.[MessageHeaders.deadReason]).toBe("bad-signature");
    expect(seen).toEqual([]);
  });

  test("one sent again is delivered again with the same id, for the consumer to deduplicate on", async () => {
    const queue = queueName();
    const seen = await holdCommands(queue);
    const messageId = randomUUID();
    const payload = release();
    await textMac.publish("billing.hold.release", payload, { messageId });
    await textMac.publish("billing.hold.release", payload, { messageId });
    await eventually(() => expect(seen).toHaveLength(2));
    expect(seen.map((m) => m.messageId)).toEqual([messageId, messageId]);
  });
});
