import type { ChannelModel, GetMessage } from "amqplib";
import { MessageHeaders, readAttempt, readRoutingKey, type HeaderTable } from "./message-headers";
import { queueCounts } from "./queue-census";
import { deadLetterQueueName, movesExchangeName, republish } from "./topology";

/** A dead-lettered message as an operator reads it. */
export interface DeadLetter {
  messageId: string | undefined;
  routingKey: string;
  attempt: number;
  /** The consumer's reason (retry-policy's DeadLetterReason), or the broker's (`delivery_limit`: its consumer never settled it). */
  reason: string;
  error: string | undefined;
  deadAt: string | undefined;
  body: string;
}

/** Accepts a work queue's name or its dead-letter queue's. */
export function workQueueOf(queue: string): string {
  return queue.endsWith(".dlq") ? queue.slice(0, -".dlq".length) : queue;
}

/** How many messages each work queue's dead-letter queue holds; null where it is not declared. */
export async function deadLetterCount(model: ChannelModel, queue: string): Promise<number | null> {
  return (await queueCounts(model, deadLetterQueueName(queue)))?.messages ?? null;
}

/** Up to `limit` messages from the head of a queue's dead-letter queue, left where they are. */
export async function showDeadLetters(model: ChannelModel, queue: string, limit: number): Promise<DeadLetter[]> {
  const channel = await model.createChannel();
  channel.on("error", () => undefined);
  const letters: DeadLetter[] = [];
  try {
    for (let i = 0; i < limit; i++) {
      const message = await channel.get(deadLetterQueueName(queue), { noAck: false });
      if (message === false) break;
      letters.push(describe(message));
    }
  } finally {
    // Closing the channel unacked returns every message taken, in order.
    await channel.close().catch(() => undefined);
  }
  return letters;
}

/**
 * Puts each message now in the dead-letter queue back on its work queue (through the queue's moves
 * exchange, so no other queue bound to its routing key gets it again), as a first attempt with the routing
 * key it was published with. Each copy is confirmed before the dead letter is acked; the count is read
 * first, so a message that fails again is not replayed twice in one run. Resolves with how many.
 */
export async function replayDeadLetters(model: ChannelModel, queue: string): Promise<number> {
  const channel = await model.createConfirmChannel();
  channel.on("error", () => undefined);
  try {
    const dlq = deadLetterQueueName(queue);
    const { messageCount } = await channel.checkQueue(dlq);
    let replayed = 0;
    for (; replayed < messageCount; replayed++) {
      const message = await channel.get(dlq, { noAck: false });
      if (message === false) break;
      await republish(channel, movesExchangeName(queue), queue, withoutDeath(message), {
        [MessageHeaders.attempt]: 1,
        [MessageHeaders.routingKey]: publishedRoutingKey(message),
      });
      channel.ack(message);
    }
    return replayed;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** Empties a queue's dead-letter queue; resolves with how many messages it dropped. */
export async function purgeDeadLetters(model: ChannelModel, queue: string): Promise<number> {
  const channel = await model.createChannel();
  channel.on("error", () => undefined);
  try {
    return (await channel.purgeQueue(deadLetterQueueName(queue))).messageCount;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

const DEAD_HEADERS = [MessageHeaders.deadReason, MessageHeaders.deadError, MessageHeaders.deadQueue, MessageHeaders.deadAt];

function withoutDeath(message: GetMessage): GetMessage {
  const headers: HeaderTable = { ...(message.properties.headers ?? {}) };
  for (const name of DEAD_HEADERS) delete headers[name];
  return { ...message, properties: { ...message.properties, headers } };
}

/** The broker keeps the published routing key in x-death (newest first) when it dead-letters; the consumer's moves keep it in x-routing-key. */
function publishedRoutingKey(message: GetMessage): string {
  const header: unknown = message.properties.headers?.[MessageHeaders.routingKey];
  if (typeof header === "string" && header !== "") return header;
  const death: unknown = message.properties.headers?.["x-death"];
  const keys: unknown = Array.isArray(death) ? (death[0] as { "routing-keys"?: unknown } | undefined)?.["routing-keys"] : undefined;
  const first: unknown = Array.isArray(keys) ? keys[0] : undefined;
  return typeof first === "string" ? first : readRoutingKey(message);
}

function describe(message: GetMessage): DeadLetter {
  const headers = message.properties.headers ?? {};
  const text = (name: string): string | undefined => (typeof headers[name] === "string" ? (headers[name] as string) : undefined);
  return {
    messageId: message.properties.messageId as string | undefined,
    routingKey: publishedRoutingKey(message),
    attempt: readAttempt(message),
    reason: text(MessageHeaders.deadReason) ?? text("x-first-death-reason") ?? "unknown",
    error: text(MessageHeaders.deadError),
    deadAt: text(MessageHeaders.deadAt),
    body: message.content.toString("utf8"),
  };
}
