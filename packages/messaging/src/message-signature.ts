import { sign, verify } from "node:crypto";
import { mayPublish, type Deployable, type RoutingKey } from "@meter/contracts";
import { sha256Hex, type InternalKeys } from "@meter/signing";
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
 * exactly this routing key, id and body, and the catalog lets that deployable publish that key.
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
  if (!mayPublish(signer.signer, message.routingKey)) {
    return { ok: false, reason: "forbidden-producer", error: `${signer.signer} may not publish ${message.routingKey}` };
  }
  return { ok: true, producer: signer.signer };
}

function canonical(producer: Deployable, kid: string, { routingKey, messageId, body }: SignedMessage): Buffer {
  return Buffer.from(["meter-message-v1", producer, kid, routingKey, messageId, sha256Hex(body)].join("\n"));
}
