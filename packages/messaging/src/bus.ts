import { randomUUID } from "node:crypto";
import type { MessagePayload, RoutingKey } from "@meter/contracts";
import type { InternalKeys } from "@meter/signing";
import type { ChannelModel } from "amqplib";
import type { Registry } from "prom-client";
import { parseMessage } from "./catalog";
import { BusConnection, type ReconnectOptions } from "./connection";
import { registerDeadLetterGauge } from "./dead-letter-metric";
import { QueueConsumer, type BatchHandler, type Consumer, type ConsumerMode, type MessageHandler } from "./consumer";
import { BusUnavailableError } from "./errors";
import { silentLogger, type BusLogger } from "./logger";
import { MessageSeal, type BusCommandSign } from "./message-signature";
import { Publisher } from "./publisher";
import { deadLetterCounter, refusalCounter, type DeadLetterCounter, type RefusalCounter } from "./refusal-metric";
import { resolveRetryPolicy, type RetryPolicy } from "./retry-policy";
import { assertQueueSpec, checkDeclaredByConsumer, checkTopology, declareTopology, EXCHANGE, unroutedMessageCount, type QueueSpec } from "./topology";

export interface BusOptions {
  /** amqp://user:pass@host:port/vhost; add ?heartbeat=N to detect a dead peer sooner than the broker's default. */
  url: string;
  /** Shown as the connection name in the broker and set as each message's app id. */
  name: string;
  /**
   * `declare`: this process owns the bus topology (TOPOLOGY_OWNER, billing-ledger; or a test standing in
   * for it) and declares the exchanges and the unrouted queue on every connect, which its broker user
   * alone may. `await`: every other deployable only checks they exist (passive declarations); until the
   * owner has declared them it keeps connecting again, connectBus resolves without a connection, and
   * `waitingForTopology()` says so (its readiness reports it).
   */
  topology: "declare" | "await";
  /**
   * The process's keys (INTERNAL_SIGNING_KEY, INTERNAL_PUBLIC_KEYS): every message it publishes is signed
   * as `keys.self`, and its consumers take only messages signed by a producer the catalog names.
   */
  keys: InternalKeys;
  /**
   * How the commands it publishes are sealed (BUS_COMMAND_SIGN): `ed25519` (the default; what every
   * release believes) or `mac`, a MAC for the command's one consumer (message-signature.ts), once every
   * consumer runs a release that believes it. Events are always signed Ed25519.
   */
  commandSign?: BusCommandSign;
  /** The service's /metrics registry, for bus_messages_refused_total, bus_messages_dead_lettered_total and bus_dead_letter_messages. */
  registry?: Registry;
  logger?: BusLogger;
  /** How long connectBus waits for the first connection before failing with BusUnavailableError. Default 30 s. */
  connectTimeoutMs?: number;
  /** How long publish (and consume's start) waits for a connection, and then publish for the broker's confirm. Default 10 s. */
  publishTimeoutMs?: number;
  reconnect?: ReconnectOptions;
}

export interface PublishOptions {
  /** The id consumers deduplicate on; a fresh UUID by default. */
  messageId?: string;
  /** Application headers; names starting with "x-" are the bus's and the broker's. */
  headers?: Record<string, string | number | boolean>;
  /** Overrides the bus's publishTimeoutMs for this message. */
  timeoutMs?: number;
}

export interface ConsumeOptions<K extends RoutingKey> extends QueueSpec {
  routingKeys: readonly K[];
  /** Unacked deliveries the broker hands this consumer at once. Default 16 (twice maxBatch for a batch consumer). */
  prefetch?: number;
  retry?: Partial<RetryPolicy>;
  /**
   * A queue of this process alone, for events every replica must hear (a cache to invalidate): exclusive
   * to the connection and deleted with it, declared afresh (`<queue>.<random>`) on every reconnect. It has
   * no retry or dead-letter queue: a message that fails is logged and dropped, and what is published
   * while the connection is down is missed, so use it only where something else (a TTL) covers a miss.
   */
  exclusive?: boolean;
}

export interface ConsumeSingleOptions<K extends RoutingKey> extends ConsumeOptions<K> {
  /** Resolving acks the message; throwing retries it later, or dead-letters it if it is a NonRetryableError. */
  handler: MessageHandler<K>;
}

export interface ConsumeBatchOptions<K extends RoutingKey> extends ConsumeOptions<K> {
  /** The most messages handed to one handler call; a call takes what has arrived, it never waits to fill up. */
  maxBatch: number;
  handler: BatchHandler<K>;
}

export interface Bus {
  readonly name: string;
  /** Validates the payload against the catalog, publishes it persistently and resolves with its message id once the broker confirms it. */
  publish<K extends RoutingKey>(routingKey: K, payload: MessagePayload<K>, options?: PublishOptions): Promise<string>;
  consume<K extends RoutingKey>(options: ConsumeSingleOptions<K>): Promise<Consumer>;
  consumeBatch<K extends RoutingKey>(options: ConsumeBatchOptions<K>): Promise<Consumer>;
  /**
   * Makes this publisher send the queue's routing keys (a command queue of another deployable) only once
   * its consumer has declared it: before that, publish fails with QueueNotDeclaredError and the outbox
   * tries again, so no command lands in the unrouted queue. A producer never declares a queue itself.
   */
  requireQueue(spec: QueueSpec): void;
  isConnected(): boolean;
  /** Not connected only because the topology's owner has not declared the exchanges yet (BusOptions.topology `await`). */
  waitingForTopology(): boolean;
  /** Messages waiting in the unrouted queue; BusUnavailableError at once while there is no connection. */
  unroutedMessageCount(): Promise<number>;
  /** Stops every consumer (waiting for its handlers), waits for publishes under way and closes the connection. */
  close(): Promise<void>;
}

/**
 * Connects to the broker and resolves once the first connection is up, having declared the topology (its
 * owner) or found it declared; or, for a process that awaits it, once the broker answered that it is not
 * declared yet: the bus then connects by itself as soon as it is.
 */
export async function connectBus(options: BusOptions): Promise<Bus> {
  const bus = new AmqpBus(options);
  try {
    await bus.start(options.connectTimeoutMs ?? 30_000);
  } catch (err) {
    await bus.close();
    throw err;
  }
  return bus;
}

class AmqpBus implements Bus {
  readonly name: string;
  private readonly logger: BusLogger;
  private readonly connection: BusConnection;
  private readonly publisher: Publisher;
  private readonly publishTimeoutMs: number;
  private readonly seal: MessageSeal;
  private readonly refused: RefusalCounter;
  private readonly deadLettered: DeadLetterCounter;
  private readonly consumers = new Set<Consumer>();
  /** The durable queues this process consumes, whose dead-letter queues bus_dead_letter_messages reports. */
  private readonly durableQueues = new Set<string>();
  /** Routing key -> the queue a publish of it waits for (requireQueue). */
  private readonly required = new Map<string, string>();
  /** Per connection, the required queues found declared, or being checked: a queue is checked once per connection. */
  private readonly declared = new WeakMap<ChannelModel, Map<string, Promise<void>>>();
  private closing: Promise<void> | undefined;

  constructor(options: BusOptions) {
    this.name = options.name;
    this.logger = options.logger ?? silentLogger;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
    this.seal = new MessageSeal(options.keys, options.commandSign);
    this.refused = refusalCounter(options.registry);
    this.deadLettered = deadLetterCounter(options.registry);
    this.connection = new BusConnection({
      url: options.url,
      name: options.name,
      logger: this.logger,
      reconnect: options.reconnect,
      setup: options.topology === "declare" ? (model) => declareTopology(model, this.logger) : checkTopology,
    });
    this.publisher = new Publisher(this.connection, this.logger);
    if (options.registry) {
      registerDeadLetterGauge(
        options.registry,
        () => [...this.durableQueues],
        () => (this.closing ? null : this.connection.current),
      );
    }
  }

  async start(timeoutMs: number): Promise<void> {
    this.connection.start();
    await this.connection.waitForBroker(timeoutMs);
  }

  async publish<K extends RoutingKey>(routingKey: K, payload: MessagePayload<K>, options: PublishOptions = {}): Promise<string> {
    const parsed = parseMessage(routingKey, payload);
    if (this.closing) throw new BusUnavailableError("the bus is closed");
    const messageId = options.messageId ?? randomUUID();
    const timeoutMs = options.timeoutMs ?? this.publishTimeoutMs;
    const queue = this.required.get(routingKey);
    if (queue !== undefined) await this.declaredByConsumer(queue, timeoutMs);
    const body = Buffer.from(JSON.stringify(parsed));
    await this.publisher.publish(
      EXCHANGE,
      routingKey,
      body,
      {
        persistent: true,
        contentType: "application/json",
        messageId,
        timestamp: Math.floor(Date.now() / 1000),
        appId: this.name,
        // The signature's headers last: a caller's header cannot stand in for them.
        headers: { ...options.headers, ...this.seal.sign({ routingKey, messageId, body }) },
      },
      timeoutMs,
    );
    return messageId;
  }

  consume<K extends RoutingKey>(options: ConsumeSingleOptions<K>): Promise<Consumer> {
    return this.startConsumer(options, options.prefetch ?? 16, { kind: "single", handler: options.handler });
  }

  consumeBatch<K extends RoutingKey>(options: ConsumeBatchOptions<K>): Promise<Consumer> {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) throw new TypeError("maxBatch must be an integer >= 1");
    const prefetch = options.prefetch ?? Math.max(16, options.maxBatch * 2);
    return this.startConsumer(options, prefetch, { kind: "batch", maxBatch: options.maxBatch, handler: options.handler });
  }

  requireQueue(spec: QueueSpec): void {
    assertQueueSpec(spec);
    for (const key of spec.routingKeys) this.required.set(key, spec.queue);
  }

  isConnected(): boolean {
    return this.connection.current !== null;
  }

  waitingForTopology(): boolean {
    return this.connection.waitingForTopology;
  }

  async unroutedMessageCount(): Promise<number> {
    const model = this.connection.current;
    if (!model || this.closing) throw new BusUnavailableError("not connected to the broker");
    return unroutedMessageCount(model);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async startConsumer<K extends RoutingKey>(options: ConsumeOptions<K>, prefetch: number, mode: ConsumerMode<K>): Promise<Consumer> {
    if (this.closing) throw new BusUnavailableError("the bus is closed");
    assertQueueSpec(options);
    if (!Number.isInteger(prefetch) || prefetch < 1) throw new TypeError("prefetch must be an integer >= 1");
    const spec = { queue: options.queue, routingKeys: options.routingKeys, exclusive: options.exclusive ?? false };
    const guard = { seal: this.seal, refused: this.refused, deadLettered: this.deadLettered };
    const consumer = new QueueConsumer(this.connection, this.logger, guard, spec, prefetch, resolveRetryPolicy(options.retry), mode);
    await consumer.start(this.publishTimeoutMs);
    if (!spec.exclusive) this.durableQueues.add(spec.queue);
    const registered: Consumer = {
      queue: consumer.queue,
      stop: async () => {
        this.consumers.delete(registered);
        await consumer.stop();
      },
    };
    this.consumers.add(registered);
    return registered;
  }

  private async declaredByConsumer(queue: string, timeoutMs: number): Promise<void> {
    const model = await this.connection.waitForModel(timeoutMs);
    const checks = this.declared.get(model) ?? new Map<string, Promise<void>>();
    this.declared.set(model, checks);
    let check = checks.get(queue);
    if (!check) {
      check = checkDeclaredByConsumer(model, queue);
      checks.set(queue, check);
      // A failed check is not remembered: the next publish looks again.
      check.catch(() => checks.delete(queue));
    }
    await check;
  }

  private async shutdown(): Promise<void> {
    await Promise.allSettled([...this.consumers].map((consumer) => consumer.stop()));
    await this.publisher.close();
    await this.connection.close();
  }
}
