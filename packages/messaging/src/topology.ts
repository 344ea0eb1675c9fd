import { randomBytes } from "node:crypto";
import { BusExchanges, type RoutingKey } from "@meter/contracts";
import type { Channel, ChannelModel, Options } from "amqplib";

/** The one topic exchange every message is published to, with its routing key from the catalog. */
export const EXCHANGE = BusExchanges.main;
/** Where the broker puts a message that no queue is bound to, instead of dropping it (an alternate exchange). */
export const UNROUTED_EXCHANGE = BusExchanges.unrouted;
export const UNROUTED_QUEUE = BusExchanges.unrouted;
/**
 * The unrouted queue is for diagnosis, not delivery: it shows what was published while no queue was
 * bound to its key (a revocation while every gateway restarts, say; their key cache's TTL covers it).
 * It is bounded so that a publisher nobody listens to cannot fill the broker's disk, and when full it
 * drops its OLDEST message (drop-head). reject-publish would nack the publisher instead: an outbox relay
 * would retry that event forever, and "nobody is listening right now" would become a publisher failure.
 * Commands never land here: their publishers declare the command queues (CommandQueues).
 */
export const UNROUTED_QUEUE_MAX_LENGTH = 10_000;
const UNROUTED_QUEUE_OPTIONS: Options.AssertQueue = {
  durable: true,
  arguments: { "x-max-length": UNROUTED_QUEUE_MAX_LENGTH, "x-overflow": "drop-head" },
};
/** AMQP reply code when a queue exists with other arguments than those declared. */
const PRECONDITION_FAILED = 406;

export function deadLetterQueueName(queue: string): string {
  return `${queue}.dlq`;
}

/** A delay queue. (Before the moves exchange they were `<queue>.retry.<ms>`, dead-lettering through the default exchange.) */
export function retryQueueName(queue: string, delayMs: number): string {
  return `${queue}.delay.${delayMs}`;
}

/**
 * The direct exchange a consumer moves copies through (to its delay queues, its dead-letter queue, and
 * back to its queue when a delay expires), each bound under its own name. Its own exchange rather than
 * the default one, which reaches every queue by name: a consumer's broker user may publish to this
 * exchange and so reaches only its own queues.
 */
export function movesExchangeName(queue: string): string {
  return `${queue}.moves`;
}

export interface QueueSpec {
  queue: string;
  routingKeys: readonly RoutingKey[];
}

export function assertQueueSpec({ queue, routingKeys }: QueueSpec): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(queue)) throw new TypeError(`bad queue name "${queue}"`);
  if (/\.(dlq|retry\.\d+|delay\.\d+|moves)$/.test(queue)) throw new TypeError(`queue name "${queue}" collides with a retry or dead-letter queue`);
  if (routingKeys.length === 0) throw new TypeError(`queue "${queue}" needs at least one routing key`);
}

/** Runs on every (re)connect. Each step gets a channel of its own, since a refused declaration closes its channel. */
export async function declareExchanges(model: ChannelModel): Promise<void> {
  await withChannel(model, (channel) => channel.assertExchange(UNROUTED_EXCHANGE, "fanout", { durable: true }));
  await declareUnroutedQueue(model);
  await withChannel(model, async (channel) => {
    await channel.bindQueue(UNROUTED_QUEUE, UNROUTED_EXCHANGE, "");
    await channel.assertExchange(EXCHANGE, "topic", { durable: true, alternateExchange: UNROUTED_EXCHANGE });
  });
}

/** How many messages wait in the unrouted queue (published while no queue was bound to their key). */
export async function unroutedMessageCount(model: ChannelModel): Promise<number> {
  return withChannel(model, async (channel) => (await channel.checkQueue(UNROUTED_QUEUE)).messageCount);
}

async function declareUnroutedQueue(model: ChannelModel): Promise<void> {
  try {
    await withChannel(model, (channel) => channel.assertQueue(UNROUTED_QUEUE, UNROUTED_QUEUE_OPTIONS));
  } catch (err) {
    if ((err as { code?: unknown }).code !== PRECONDITION_FAILED) throw err;
    // Declared unbounded by an earlier version, and a queue's arguments cannot change in place. It only
    // holds messages nobody consumed, so it is replaced. Two processes doing this at once both end with
    // the bounded queue; one that loses the race fails this attempt and connects again.
    await withChannel(model, (channel) => channel.deleteQueue(UNROUTED_QUEUE));
    await withChannel(model, (channel) => channel.assertQueue(UNROUTED_QUEUE, UNROUTED_QUEUE_OPTIONS));
  }
}

async function withChannel<T>(model: ChannelModel, work: (channel: Channel) => Promise<T>): Promise<T> {
  const channel = await model.createChannel();
  // The broker closes a channel whose declaration it refuses; without a listener that 'error' would be thrown.
  channel.on("error", () => undefined);
  try {
    return await work(channel);
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/** The queue, its bindings and its dead-letter queue: enough to hold messages before any consumer starts. */
export async function declareQueue(channel: Channel, spec: QueueSpec): Promise<void> {
  assertQueueSpec(spec);
  await channel.assertQueue(deadLetterQueueName(spec.queue), { durable: true });
  await channel.assertQueue(spec.queue, { durable: true });
  for (const key of spec.routingKeys) await channel.bindQueue(spec.queue, EXCHANGE, key);
}

/**
 * A queue of one connection (ConsumeOptions.exclusive), deleted with it, under a fresh name each time:
 * after a lost connection the broker may not have noticed yet that the old one is gone, and its queue
 * would still hold the old name. Resolves with the name.
 */
export async function declareExclusiveQueue(channel: Channel, spec: QueueSpec): Promise<string> {
  assertQueueSpec(spec);
  const name = `${spec.queue}.${randomBytes(4).toString("hex")}`;
  const { queue } = await channel.assertQueue(name, { exclusive: true, autoDelete: true, durable: false });
  for (const key of spec.routingKeys) await channel.bindQueue(queue, EXCHANGE, key);
  return queue;
}

/**
 * A consumer's moves exchange with its queue and dead-letter queue bound to it, and one delay queue per
 * backoff step. Every message in a delay queue has the same TTL, so expiry happens at the head and nothing
 * waits behind a longer delay; on expiry the broker dead-letters it back to the work queue through the
 * moves exchange.
 */
export async function declareMoves(channel: Channel, queue: string, delaysMs: readonly number[]): Promise<void> {
  const moves = movesExchangeName(queue);
  await channel.assertExchange(moves, "direct", { durable: true });
  await channel.bindQueue(queue, moves, queue);
  await channel.bindQueue(deadLetterQueueName(queue), moves, deadLetterQueueName(queue));
  for (const delayMs of new Set(delaysMs)) {
    const delay = retryQueueName(queue, delayMs);
    await channel.assertQueue(delay, { durable: true, messageTtl: delayMs, deadLetterExchange: moves, deadLetterRoutingKey: queue });
    await channel.bindQueue(delay, moves, delay);
  }
}
