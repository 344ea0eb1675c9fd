import { randomUUID, sign, verify } from "node:crypto";
import type { RoutingKey } from "@meter/contracts";
import { sha256Hex, type InternalKeys } from "@meter/signing";
import { createTestVhost, testKeys, type TestVhost } from "@meter/testing";
import { connectBus, type Bus, type Consumer, type MessageMeta } from "../src";
import { openInspector, type BrokerInspector } from "./support/broker-inspector";
import { eventually } from "./support/waiting";

/**
 * A rolling upgrade from release 1.0.0 on the bus (docs/deploy.md, Upgrading): the message scheme did
 * not change in 1.1.0, so a 1.0.0 producer's messages reach a 1.1.0 consumer and the reverse. Release
 * 1.0.0's signing (packages/messaging/src/message-signature.ts at that release) is written out here, so
 * a change of the scheme in this code shows up as a failure, not as a silent break of the upgrade.
 */
const HEADERS_100 = { producer: "x-producer", keyId: "x-key-id", signature: "x-signature" };
const canonical100 = (producer: string, kid: string, routingKey: string, messageId: string, body: Buffer) =>
  Buffer.from(["meter-message-v1", producer, kid, routingKey, messageId, sha256Hex(body)].join("\n"));
const signAs100 = (keys: InternalKeys, routingKey: RoutingKey, messageId: string, body: Buffer): Record<string, string> => ({
  [HEADERS_100.producer]: keys.self,
  [HEADERS_100.keyId]: keys.signing.kid,
  [HEADERS_100.signature]: sign(null, canonical100(keys.self, keys.signing.kid, routingKey, messageId, body), keys.signing.key).toString("base64url"),
});
function verifiesAs100(keys: InternalKeys, headers: Record<string, unknown>, routingKey: string, messageId: string, body: Buffer): boolean {
  const kid = headers[HEADERS_100.keyId];
  const producer = headers[HEADERS_100.producer];
  const signer = typeof kid === "string" ? keys.trusted.get(kid) : undefined;
  if (!signer || signer.signer !== producer) return false;
  return verify(
    null,
    canonical100(signer.signer, kid as string, routingKey, messageId, body),
    signer.key,
    Buffer.from(String(headers[HEADERS_100.signature]), "base64url"),
  );
}

let vhost: TestVhost;
let billing: Bus;
let text: Bus;
let inspector: BrokerInspector;
const consumers: Consumer[] = [];

beforeAll(async () => {
  vhost = await createTestVhost();
  billing = await connectBus({ url: vhost.url, name: "billing-ledger", keys: testKeys("billing-ledger") });
  text = await connectBus({ url: vhost.url, name: "text", keys: testKeys("text") });
  inspector = await openInspector(vhost.url);
});

afterAll(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
  await Promise.all([billing?.close(), text?.close(), inspector?.close()]);
  await vhost?.drop();
});

const release = () => ({ version: "v1" as const, hold_id: randomUUID(), reason: "customer cancelled" });

it("a hold command text 1.0.0 published reaches billing-ledger 1.1.0's handler, its producer proven", async () => {
  const seen: MessageMeta[] = [];
  consumers.push(
    await billing.consume({
      queue: `mixed.${randomUUID().slice(0, 8)}`,
      routingKeys: ["billing.hold.release"],
      handler: async (_payload, meta) => void seen.push(meta),
    }),
  );
  const messageId = randomUUID();
  const body = Buffer.from(JSON.stringify(release()));
  await inspector.publishRaw("meter", "billing.hold.release", body.toString(), {
    messageId,
    contentType: "application/json",
    headers: signAs100(testKeys("text"), "billing.hold.release", messageId, body),
  });
  await eventually(() => expect(seen).toEqual([expect.objectContaining({ messageId, producer: "text" })]));
});

it("a hold command text 1.1.0 publishes is one billing-ledger 1.0.0 believes", async () => {
  const queue = `mixed.${randomUUID().slice(0, 8)}`;
  // Declared by a consumer, then left without one, so the message waits for the test to read it raw.
  const consumer = await billing.consume({ queue, routingKeys: ["billing.hold.release"], handler: async () => undefined });
  await consumer.stop();
  const messageId = await text.publish("billing.hold.release", release());
  const message = await eventually(async () => {
    const m = await inspector.take(queue);
    if (!m) throw new Error("not there yet");
    return m;
  });
  expect(message.properties.messageId).toBe(messageId);
  expect(verifiesAs100(testKeys("billing-ledger"), message.properties.headers ?? {}, "billing.hold.release", messageId, message.content)).toBe(true);
});
