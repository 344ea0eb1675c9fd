import type { Message } from "amqplib";

/**
 * Headers of the bus: the producer's signature, set on publishing, and what the bus adds to the copies it
 * moves to a delay or dead-letter queue. Every copy keeps the signature, so a retry is checked again.
 */
export const MessageHeaders = {
  /** The deployable that published the message (contracts' `Deployable`). */
  producer: "x-producer",
  /** The kid of the producer's INTERNAL_SIGNING_KEY. */
  keyId: "x-key-id",
  /** Ed25519 over producer, kid, routing key, message id and the body's SHA-256 (message-signature.ts), base64url. */
  signature: "x-signature",
  /** 1-based number of the delivery to the handler that this copy will be. */
  attempt: "x-attempt",
  /** The routing key the message was published with; a delay queue hands it back under the queue's name. */
  routingKey: "x-routing-key",
  deadReason: "x-dead-reason",
  deadError: "x-dead-error",
  deadQueue: "x-dead-queue",
  deadAt: "x-dead-at",
} as const;

/** What the broker adds on dead-lettering, and a quorum queue on redelivery. */
const BROKER_DEATH_HEADERS = [
  "x-death",
  "x-delivery-count",
  "x-first-death-exchange",
  "x-first-death-queue",
  "x-first-death-reason",
  "x-last-death-exchange",
  "x-last-death-queue",
  "x-last-death-reason",
];

export type HeaderTable = Record<string, unknown>;

export function readAttempt(message: Message): number {
  const value: unknown = message.properties.headers?.[MessageHeaders.attempt];
  const attempt = typeof value === "number" ? value : typeof value === "string" ? Number(value) : NaN;
  return Number.isInteger(attempt) && attempt >= 1 ? attempt : 1;
}

export function readRoutingKey(message: Message): string {
  const value: unknown = message.properties.headers?.[MessageHeaders.routingKey];
  return typeof value === "string" && value !== "" ? value : message.fields.routingKey;
}

/** The headers a copy carries on: the publisher's own, without the broker's dead-lettering history. */
export function carriedHeaders(message: Message): HeaderTable {
  const headers: HeaderTable = { ...(message.properties.headers ?? {}) };
  for (const name of BROKER_DEATH_HEADERS) delete headers[name];
  return headers;
}

/** The publisher's headers as the handler sees them: without the bus's and broker's bookkeeping. */
export function applicationHeaders(message: Message): HeaderTable {
  const headers = carriedHeaders(message);
  for (const name of Object.values(MessageHeaders)) delete headers[name];
  return headers;
}
