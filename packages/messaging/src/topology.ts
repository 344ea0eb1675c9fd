import { randomBytes } from "node:crypto";
import { BusExchanges, TOPOLOGY_OWNER, type RoutingKey } from "@meter/contracts";
import type { Channel, ChannelModel, ConfirmChannel, Message, Options } from "amqplib";
import { publishConfirmed } from "./confirm";
import { QueueNotDeclaredError, TopologyNotDeclaredError } from "./errors";
import type { BusLogger } from "./logger";
import { carriedHeaders, MessageHeaders, readRoutingKey, type HeaderTable } from "./message-headers";

/** The one topic exchange every message is published to, with its routing key from the catalog. */
export const EXCHANGE = BusExchanges.main;
/** The deployable that declares the exchanges and the unrouted queue (BusOptions.topology "declare"); every other one waits for them. */
export { TOPOLOGY_OWNER };
/** Where the broker puts a message that no queue is bound to, instead of dropping it (an alternate exchange). */
export const UNROUTED_EXCHANGE = BusExchanges.unrouted;
export const UNROUTED_QUEUE = BusExchanges.unrouted;
/**
 * The unrouted queue is for diagnosis, not delivery: it shows what was published while no queue was
 * bound to its key (a revocation while every gateway restarts, say; their key cache's TTL covers it).
 * It is bounded so that a publisher nobody listens to cannot fill the broker's disk, and when full it
 * drops its OLDEST message (drop-head). reject-publish would nack the publisher instead: an outbox relay
 * would retry that event forever, and "nobody is listening right now" would become a publisher failure.
 * Commands never land here: a publisher sends a command only once its consumer has declared its queue
 * (Bus.requireQueue).
 */
export const UNROUTED_QUEUE_MAX_LENGTH = 10_000;
/** AMQP reply code when a queue exists with other arguments than those declared. */
const PRECONDITION_FAILED = 406;
/** AMQP reply code of a passive declaration of something that does not exist. */
const NOT_FOUND = 404;
/** AMQP reply code of what the user has no right to do. */
const ACCESS_REFUSED = 403;

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
  if (/\.(dlq|retry\.\d+|delay\.\d+|moves|moving)$/.test(queue)) throw new TypeError(`queue name "${queue}" collides with a retry or dead-letter queue`);
  if (routingKeys.length === 0) throw new TypeError(`queue "${queue}" needs at least one routing key`);
}

/**
 * The topology's owner (TOPOLOGY_OWNER) declares the exchanges and the unrouted queue on every
 * (re)connect; its broker user alone may (contracts' brokerRights). The unrouted queue is a quorum queue,
 * bound to its fanout exchange; one an earlier release declared otherwise (classic) is moved to it as a
 * consumer's queues are (moveQueue), through that exchange, keeping its messages. Each step gets a
 * channel of its own, since a refused declaration closes its channel.
 */
export async function declareTopology(model: ChannelModel, logger: BusLogger): Promise<void> {
  await withChannel(model, (channel) => channel.assertExchange(UNROUTED_EXCHANGE, "fanout", { durable: true }));
  const via = { exchange: UNROUTED_EXCHANGE, type: "fanout" } as const;
  if (await declareIfEquivalent(model, UNROUTED)) await finishMove(model, via, UNROUTED);
  else {
    await moveQueue(model, via, UNROUTED).catch((err: { code?: unknown }) => {
      if (err.code !== ACCESS_REFUSED) throw err;
      // The broker users of the previous release (run broker-users.sh after rolling out): the queue only
      // serves diagnosis, so the owner goes on with it as it is and moves it on a later connect.
      logger.warn({ queue: UNROUTED_QUEUE }, "the unrouted queue stays classic until this user may move it (broker-users.sh of this release)");
    });
  }
  await withChannel(model, async (channel) => {
    await channel.bindQueue(UNROUTED_QUEUE, UNROUTED_EXCHANGE, "");
    await channel.assertExchange(EXCHANGE, "topic", { durable: true, alternateExchange: UNROUTED_EXCHANGE });
  });
}

/**
 * What every other deployable does on each (re)connect: checks, by passive declarations (which need no
 * right), that the owner has declared the exchanges. TopologyNotDeclaredError while it has not: the
 * connection is attempted again until it has (BusConnection), and the process says so in its readiness.
 */
export async function checkTopology(model: ChannelModel): Promise<void> {
  try {
    await withChannel(model, async (channel) => {
      await channel.checkExchange(UNROUTED_EXCHANGE);
      await channel.checkExchange(EXCHANGE);
    });
  } catch (err) {
    if ((err as { code?: unknown }).code !== NOT_FOUND) throw err;
    throw new TopologyNotDeclaredError(
      `the exchange "${EXCHANGE}" is not declared yet: ${TOPOLOGY_OWNER}, which owns the bus topology, has not run on this broker`,
    );
  }
}

/** How many messages wait in the unrouted queue (published while no queue was bound to their key). */
export async function unroutedMessageCount(model: ChannelModel): Promise<number> {
  return withChannel(model, async (channel) => (await channel.checkQueue(UNROUTED_QUEUE)).messageCount);
}

/**
 * Resolves once the consumer of `queue` has declared it: the queue and its moves exchange, which the
 * consumer declares after the queue's bindings (QueueConsumer), so a message published next is routed to
 * it. Passive declarations, which the broker allows a user without any right on them: a producer never
 * configures another's queue. QueueNotDeclaredError while either is missing.
 */
export async function checkDeclaredByConsumer(model: ChannelModel, queue: string): Promise<void> {
  try {
    await withChannel(model, async (channel) => {
      await channel.checkQueue(queue);
      await channel.checkExchange(movesExchangeName(queue));
    });
  } catch (err) {
    if ((err as { code?: unknown }).code !== NOT_FOUND) throw err;
    throw new QueueNotDeclaredError(`queue "${queue}" is not declared yet: its consumer has not run on this broker`);
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

/**
 * Deliveries of one message to consumers that never settled it (a process killed by an OOM while handling
 * it) before the broker dead-letters it to the dead-letter queue: a handler's own failures are retried and
 * dead-lettered by the consumer (RetryPolicy) and do not count. RabbitMQ 4's default for quorum queues.
 */
export const DELIVERY_LIMIT = 20;
/**
 * A dead-letter queue keeps at most this many messages and then drops its OLDEST (drop-head), like the
 * unrouted queue: reject-publish would nack the consumer's move and leave the failing message cycling in
 * its work queue. bus_dead_letter_messages (dead-letter-metric.ts) alerts long before the bound.
 */
export const DEAD_LETTER_QUEUE_MAX_LENGTH = 10_000;

/** A durable queue of a consumer: how it is declared and what routes to it. */
interface DurableQueue {
  name: string;
  options: Options.AssertQueue;
  bindings: readonly { exchange: string; key: string }[];
}

/**
 * Quorum queues, replicated across the broker's nodes (RabbitMQ 4 has no classic mirroring). Dead-lettering
 * is at-least-once: the broker keeps a message until the target queue confirms it, which quorum queues
 * allow only with reject-publish overflow (these work and delay queues have no length limit, so it never applies).
 */
const QUORUM = { "x-queue-type": "quorum" } as const;
const AT_LEAST_ONCE = { "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish" } as const;

/** The unrouted queue: quorum, like every durable queue, with its bound (drop-head: see UNROUTED_QUEUE_MAX_LENGTH). */
const UNROUTED: DurableQueue = {
  name: UNROUTED_QUEUE,
  options: { durable: true, arguments: { ...QUORUM, "x-max-length": UNROUTED_QUEUE_MAX_LENGTH, "x-overflow": "drop-head" } },
  bindings: [{ exchange: UNROUTED_EXCHANGE, key: "" }],
};

/** A consumer's work queue, dead-letter queue and delay queues, in the order they are declared: the work queue's bindings create the moves exchange. */
function durableQueues({ queue, routingKeys }: QueueSpec, delaysMs: readonly number[]): DurableQueue[] {
  const moves = movesExchangeName(queue);
  const dlq = deadLetterQueueName(queue);
  return [
    {
      name: queue,
      options: {
        durable: true,
        arguments: { ...QUORUM, ...AT_LEAST_ONCE, "x-delivery-limit": DELIVERY_LIMIT, "x-dead-letter-exchange": moves, "x-dead-letter-routing-key": dlq },
      },
      bindings: [...routingKeys.map((key) => ({ exchange: EXCHANGE, key })), { exchange: moves, key: queue }],
    },
    {
      name: dlq,
      options: { durable: true, arguments: { ...QUORUM, "x-max-length": DEAD_LETTER_QUEUE_MAX_LENGTH, "x-overflow": "drop-head" } },
      bindings: [{ exchange: moves, key: dlq }],
    },
    ...[...new Set(delaysMs)].map((delayMs) => {
      const delay = retryQueueName(queue, delayMs);
      return {
        name: delay,
        options: {
          durable: true,
          arguments: { ...QUORUM, ...AT_LEAST_ONCE, "x-message-ttl": delayMs, "x-dead-letter-exchange": moves, "x-dead-letter-routing-key": queue },
        },
        bindings: [{ exchange: moves, key: delay }],
      };
    }),
  ];
}

/**
 * A consumer's queues, bindings and moves exchange, declared by the consumer only (QueueConsumer), each
 * step on a channel of its own. The moves exchange comes last: a publisher takes it as the sign that the
 * queue is bound (checkDeclaredByConsumer). A queue an earlier version declared otherwise (a classic one)
 * is moved to its new declaration first (moveQueue).
 *
 * The moves exchange through which a consumer moves copies (to its delay queues, its dead-letter queue,
 * and back to its queue when a delay expires, or when the broker gives up on a message after
 * DELIVERY_LIMIT deliveries) has each queue bound under its own name. Every message in a delay queue has
 * the same TTL, so expiry happens at the head and nothing waits behind a longer delay.
 */
export async function declareConsumerQueues(model: ChannelModel, spec: QueueSpec, delaysMs: readonly number[]): Promise<void> {
  assertQueueSpec(spec);
  const moves = movesExchangeName(spec.queue);
  const via = { exchange: moves, type: "direct" } as const;
  for (const queue of durableQueues(spec, delaysMs)) {
    if (!(await declareIfEquivalent(model, queue))) await moveQueue(model, via, queue);
    else await finishMove(model, via, queue);
    await withChannel(model, async (channel) => {
      for (const { exchange, key } of queue.bindings) {
        if (exchange === moves) await channel.assertExchange(moves, "direct", { durable: true });
        await channel.bindQueue(queue.name, exchange, key);
      }
    });
  }
}

/** Where a queue's messages wait while it is deleted and declared again. */
export function movingQueueName(queue: string): string {
  return `${queue}.moving`;
}

/** Declares the queue; false if it exists with other arguments (a classic queue of an earlier version). */
async function declareIfEquivalent(model: ChannelModel, queue: DurableQueue): Promise<boolean> {
  try {
    await withChannel(model, (channel) => channel.assertQueue(queue.name, queue.options));
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code !== PRECONDITION_FAILED) throw err;
    return false;
  }
}

/**
 * The exchange a move copies messages through, each bound queue under its own name: a consumer's moves
 * exchange (direct), or for the unrouted queue its own fanout exchange, which reaches whichever of the
 * old, holding and new queue is bound at that step (only one is while messages are copied).
 */
interface MoveVia {
  exchange: string;
  type: "direct" | "fanout";
}

/**
 * A queue's type and arguments cannot change in place, so it is replaced without losing a message: a
 * holding queue (`<name>.moving`, declared like the new one) takes its bindings first, so what is published
 * meanwhile lands there; the old queue, unbound, is emptied into it and deleted once empty and unused (an
 * earlier release's consumer still attached makes this attempt fail; the consumer tries again), then
 * declared anew, and finishMove empties the holding queue back. A message published while both are
 * bound may arrive twice, as any redelivery may; none is lost. Every step can be repeated, so a process
 * that dies halfway leaves work the next attempt finishes.
 */
async function moveQueue(model: ChannelModel, via: MoveVia, queue: DurableQueue): Promise<void> {
  const holding = movingQueueName(queue.name);
  const moves = via.exchange;
  await withChannel(model, async (channel) => {
    await channel.assertExchange(moves, via.type, { durable: true });
    await channel.assertQueue(holding, queue.options);
    await channel.bindQueue(holding, moves, holding);
    for (const { exchange, key } of queue.bindings) await channel.bindQueue(holding, exchange, key);
    for (const { exchange, key } of queue.bindings) await channel.unbindQueue(queue.name, exchange, key);
  });
  await transfer(model, queue.name, moves, holding);
  await withChannel(model, (channel) => channel.deleteQueue(queue.name, { ifEmpty: true, ifUnused: true }));
  await withChannel(model, (channel) => channel.assertQueue(queue.name, queue.options));
  await finishMove(model, via, queue);
}

/** Empties a holding queue left by moveQueue back into its queue, which is declared anew and bound under its name on the moves exchange. */
async function finishMove(model: ChannelModel, via: MoveVia, queue: DurableQueue): Promise<void> {
  const holding = movingQueueName(queue.name);
  const moves = via.exchange;
  const exists = await withChannel(model, (channel) => channel.checkQueue(holding)).then(
    () => true,
    (err: { code?: unknown }) => {
      if (err.code === NOT_FOUND) return false;
      throw err;
    },
  );
  if (!exists) return;
  await withChannel(model, async (channel) => {
    await channel.assertExchange(moves, via.type, { durable: true });
    for (const { exchange, key } of queue.bindings) await channel.bindQueue(queue.name, exchange, key);
    for (const { exchange, key } of [...queue.bindings, { exchange: moves, key: holding }]) await channel.unbindQueue(holding, exchange, key);
  });
  await transfer(model, holding, moves, queue.name);
  // Quorum queues refuse if-empty deletes. Unbound, the holding queue takes nothing more, so empty stays empty.
  await withChannel(model, async (channel) => {
    if ((await channel.checkQueue(holding)).messageCount > 0) throw new Error(`holding queue "${holding}" is not empty yet`);
    await channel.deleteQueue(holding);
  });
}

/**
 * Moves every message of `from` to the queue bound as `to` on the moves exchange, each confirmed before the
 * original is acked. The routing key it was published with goes along in a header, as on every move.
 */
async function transfer(model: ChannelModel, from: string, moves: string, to: string): Promise<void> {
  await withConfirmChannel(model, async (channel) => {
    for (;;) {
      const message = await channel.get(from, { noAck: false });
      if (message === false) return;
      await republish(channel, moves, to, message, {});
      channel.ack(message);
    }
  });
}

/** Publishes a copy of a message, confirmed, keeping its properties and the routing key it was published with. */
export async function republish(channel: ConfirmChannel, exchange: string, routingKey: string, message: Message, headers: HeaderTable): Promise<void> {
  const { properties } = message;
  await publishConfirmed(
    channel,
    exchange,
    routingKey,
    message.content,
    {
      persistent: true,
      messageId: properties.messageId as string | undefined,
      contentType: properties.contentType as string | undefined,
      timestamp: properties.timestamp as number | undefined,
      appId: properties.appId as string | undefined,
      headers: { ...carriedHeaders(message), [MessageHeaders.routingKey]: readRoutingKey(message), ...headers },
    },
    REPUBLISH_TIMEOUT_MS,
  );
}

const REPUBLISH_TIMEOUT_MS = 30_000;

async function withConfirmChannel<T>(model: ChannelModel, work: (channel: ConfirmChannel) => Promise<T>): Promise<T> {
  const channel = await model.createConfirmChannel();
  channel.on("error", () => undefined);
  try {
    return await work(channel);
  } finally {
    await channel.close().catch(() => undefined);
  }
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
