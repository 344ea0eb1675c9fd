import { createHmac, createSecretKey, sign, timingSafeEqual, verify, type KeyObject } from "node:crypto";
import { commandConsumer, mayPublish, type Deployable, type RoutingKey } from "@meter/contracts";
import { pairKey, sha256Hex, type InternalKeys } from "@meter/signing";
import { MessageHeaders, type HeaderTable } from "./message-headers";

/** What a signature binds: a signed message cannot be sent under another key, id, body or producer. */
export interface SignedMessage {
  routingKey: RoutingKey;
  messageId: string;
  body: Buffer;
}

export type RefusalReason = "unsigned" | "bad-signature" | "forbidden-producer";

export type MessageCheck = { ok: true; producer: Deployable } | { ok: false; reason: RefusalReason; error: string };

/**
 * The producer's headers for one message, signed with the process's own key (the INTERNAL_SIGNING_KEY of
 * internal calls). The routing key signed is the one published with: a delay queue hands the message
 * back under its own name with the original in a header, and that header is checked against this.
 */
export function signMessage(keys: InternalKeys, message: SignedMessage): Record<string, string> {
  const { kid, key } = keys.signing;
  const signature = sign(null, canonical(keys.self, kid, message), key).toString("base64url");
  return { [MessageHeaders.producer]: keys.self, [MessageHeaders.keyId]: kid, [MessageHeaders.signature]: signature };
}

/**
 * A message is believed only when a key listed in INTERNAL_PUBLIC_KEYS for the deployable it names signed
 * exactly this routing key, id and body, and the catalog lets that deployable publish that key. Checks
 * the Ed25519 signature only; MessageSeal also takes a command sealed with a MAC.
 */
export function checkMessage(trusted: InternalKeys["trusted"], headers: HeaderTable, message: SignedMessage): MessageCheck {
  const producer = headers[MessageHeaders.producer];
  const kid = headers[MessageHeaders.keyId];
  const signature = headers[MessageHeaders.signature];
  if (typeof producer !== "string" || typeof kid !== "string" || typeof signature !== "string") {
    return { ok: false, reason: "unsigned", error: "the message carries no producer signature" };
  }
  const signer = trusted.get(kid);
  if (!signer) return { ok: false, reason: "bad-signature", error: `unknown signing key "${kid.slice(0, 64)}"` };
  if (signer.signer !== producer) return { ok: false, reason: "bad-signature", error: `key "${kid}" is ${signer.signer}'s, not ${producer.slice(0, 64)}'s` };
  let valid = false;
  try {
    valid = verify(null, canonical(signer.signer, kid, message), signer.key, Buffer.from(signature, "base64url"));
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, reason: "bad-signature", error: `the signature does not match this ${message.routingKey} message` };
  return allowedProducer(signer.signer, message);
}

function allowedProducer(producer: Deployable, message: SignedMessage): MessageCheck {
  if (!mayPublish(producer, message.routingKey)) return { ok: false, reason: "forbidden-producer", error: `${producer} may not publish ${message.routingKey}` };
  return { ok: true, producer };
}

function canonical(producer: Deployable, kid: string, { routingKey, messageId, body }: SignedMessage): Buffer {
  return Buffer.from(["meter-message-v1", producer, kid, routingKey, messageId, sha256Hex(body)].join("\n"));
}

/** The signature header of a sealed command: `v2;<consumer kid>=<mac>[,<consumer kid>=<mac>]`. */
const MAC_PREFIX = "v2;";

/** How a process seals the commands it publishes (BUS_COMMAND_SIGN); events are always Ed25519-signed. */
export const BUS_COMMAND_SIGN = ["ed25519", "mac"] as const;
export type BusCommandSign = (typeof BUS_COMMAND_SIGN)[number];

/**
 * Signs what one process publishes and checks what it consumes, with every key object made once.
 *
 * An event is heard by any number of deployables, so it carries the producer's Ed25519 signature, which
 * each can check and none can forge (`meter-message-v1`). A command has exactly one consumer (its queue's
 * owner, contracts' `commandConsumer`): with `commandSign: "mac"` it carries instead an HMAC-SHA256 under
 * the producer -> consumer pair key (@meter/signing's pairKey, the key of internal HTTP calls' MACs), one
 * per key the consumer has listed during a rotation (`meter-message-v2`). Only those two processes can
 * compute it, so another deployable can neither forge nor alter a command; the consumer checks it for a
 * twentieth of the CPU of an Ed25519 verification (docs/benchmarks.md, "Issue 43"). Both schemes bind the
 * producer, its kid, the routing key, the message id and the body's SHA-256. A consumer believes both,
 * so a rolling upgrade keeps working while producers still sign Ed25519 (the default).
 */
export class MessageSeal {
  /** Per command consumer: the MAC keys this process seals with, one per key that consumer has listed. */
  private readonly outgoing = new Map<Deployable, { kid: string; key: KeyObject }[]>();
  /** Per producer kid: the MAC key of commands sealed for this process. */
  private readonly incoming = new Map<string, KeyObject>();

  constructor(
    readonly keys: InternalKeys,
    readonly commandSign: BusCommandSign = "ed25519",
  ) {}

  /** The producer's headers for one message. */
  sign(message: SignedMessage): Record<string, string> {
    const consumer = this.commandSign === "mac" ? commandConsumer(message.routingKey) : undefined;
    const targets = consumer ? this.outgoingKeys(consumer) : [];
    if (!consumer || targets.length === 0) return signMessage(this.keys, message);
    const { self, signing } = this.keys;
    const signature = `${MAC_PREFIX}${targets
      .map((t) => `${t.kid}=${mac(t.key, macCanonical(self, signing.kid, consumer, t.kid, message)).toString("base64url")}`)
      .join(",")}`;
    return { [MessageHeaders.producer]: self, [MessageHeaders.keyId]: signing.kid, [MessageHeaders.signature]: signature };
  }

  /** Like checkMessage, and a command sealed for this process with a MAC is believed as well. */
  check(headers: HeaderTable, message: SignedMessage): MessageCheck {
    const signature = headers[MessageHeaders.signature];
    if (typeof signature !== "string" || !signature.startsWith(MAC_PREFIX)) return checkMessage(this.keys.trusted, headers, message);
    const producer = headers[MessageHeaders.producer];
    const kid = headers[MessageHeaders.keyId];
    if (typeof producer !== "string" || typeof kid !== "string") return { ok: false, reason: "unsigned", error: "the message carries no producer signature" };
    const signer = this.keys.trusted.get(kid);
    if (!signer) return { ok: false, reason: "bad-signature", error: `unknown signing key "${kid.slice(0, 64)}"` };
    if (signer.signer !== producer) return { ok: false, reason: "bad-signature", error: `key "${kid}" is ${signer.signer}'s, not ${producer.slice(0, 64)}'s` };
    const { self, signing } = this.keys;
    if (commandConsumer(message.routingKey) !== self) {
      return { ok: false, reason: "bad-signature", error: `a ${message.routingKey} message sealed with a MAC is not a command of ${self}` };
    }
    const entry = signature
      .slice(MAC_PREFIX.length)
      .split(",")
      .find((e) => e.startsWith(`${signing.kid}=`));
    const given = entry ? Buffer.from(entry.slice(signing.kid.length + 1), "base64url") : undefined;
    const expected = mac(this.incomingKey(kid), macCanonical(signer.signer, kid, self, signing.kid, message));
    if (!given || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return { ok: false, reason: "bad-signature", error: `the MAC does not match this ${message.routingKey} message` };
    }
    return allowedProducer(signer.signer, message);
  }

  private outgoingKeys(consumer: Deployable): { kid: string; key: KeyObject }[] {
    let keys = this.outgoing.get(consumer);
    if (!keys) {
      const { self, signing } = this.keys;
      keys = [...this.keys.trusted]
        .filter(([, t]) => t.signer === consumer)
        .map(([kid, t]) => ({
          kid,
          key: createSecretKey(pairKey(signing, t, { callerKid: signing.kid, caller: self, audienceKid: kid, audience: consumer })),
        }));
      this.outgoing.set(consumer, keys);
    }
    return keys;
  }

  private incomingKey(producerKid: string): KeyObject {
    let key = this.incoming.get(producerKid);
    if (!key) {
      const producer = this.keys.trusted.get(producerKid)!;
      const { self, signing } = this.keys;
      key = createSecretKey(pairKey(signing, producer, { callerKid: producerKid, caller: producer.signer, audienceKid: signing.kid, audience: self }));
      this.incoming.set(producerKid, key);
    }
    return key;
  }
}

function mac(key: KeyObject, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function macCanonical(producer: Deployable, kid: string, consumer: Deployable, consumerKid: string, { routingKey, messageId, body }: SignedMessage): string {
  return ["meter-message-v2", producer, kid, consumer, consumerKid, routingKey, messageId, sha256Hex(body)].join("\n");
}
