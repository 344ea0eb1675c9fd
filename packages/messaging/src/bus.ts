import { randomUUID } from "node:crypto";
import type { MessagePayload, RoutingKey } from "@meter/contracts";
import type { InternalKeys } from "@meter/signing";
import type { Registry } from "prom-client";
import { parseMessage } from "./catalog";
import { BusConnection, type ReconnectOptions } from "./connection";
import { QueueConsumer, type BatchHandler, type Consumer, type ConsumerMode, type MessageHandler } from "./consumer";
import { BusUnavailableError } from "./errors";
import { silentLogger, type BusLogger } from "./logger";
import { signMessage } from "./message-signature";
import { Publisher } from "./publisher";
import { refusalCounter, type RefusalCounter } from "./refusal-metric";
import { resolveRetryPolicy, type RetryPolicy } from "./retry-policy";
import { declareExchanges, declareQueue, EXCHANGE, assertQueueSpec, unroutedMessageCount, type QueueSpec } from "./topology";

export interface BusOptions {
  /** amqp://user:pass@host:port/vhost; add ?heartbeat=N to detect a dead peer sooner than the broker's default. */
  url: string;
  /** Shown as the connection name in the broker and set as each message's app id. */
  name: string;
  /**
   * The process's keys (INTERNAL_SIGNING_KEY, INTERNAL_PUBLIC_KEYS): every message it publishes is signed
   * as `keys.self`, and its consumers take only messages signed by a producer the catalog names.
   */
  keys: InternalKeys;
  /** The service's /metrics registry, for bus_messages_refused_total. */
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
  /** Declares a queue, its bindings and its dead-letter queue, so it keeps messages before its consumer first starts. */
  declareQueue(spec: QueueSpec): Promise<void>;
  isConnected(): boolean;
  /** Messages waiting in the unrouted queue; BusUnavailableError at once while there is no connection. */
  unroutedMessageCount(): Promise<number>;
  /** Stops every consumer (waiting for its handlers), waits for publishes under way and closes the connection. */
  close(): Promise<void>;
}

/** Connects to the broker, declares the exchanges, and resolves once the first connection is up. */
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
  private readonly keys: InternalKeys;
  private readonly refused: RefusalCounter;
  private readonly consumers = new Set<Consumer>();
  private closing: Promise<void> | undefined;

  constructor(options: BusOptions) {
    this.name = options.name;
    this.logger = options.logger ?? silentLogger;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
    this.keys = options.keys;
    this.refused = refusalCounter(options.registry);
    this.connection = new BusConnection({
      url: options.url,
      name: options.name,
      logger: this.logger,
      reconnect: options.reconnect,
      setup: (model) => declareExchanges(model),
    });
    this.publisher = new Publisher(this.connection, this.logger);
  }

  async start(timeoutMs: number): Promise<void> {
    this.connection.start();
    await this.connection.waitForModel(timeoutMs);
  }

  async publish<K extends RoutingKey>(routingKey: K, payload: MessagePayload<K>, options: PublishOptions = {}): Promise<string> {
    const parsed = parseMessage(routingKey, payload);
    if (this.closing) throw new BusUnavailableError("the bus is closed");
    const messageId = options.messageId ?? randomUUID();
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
        headers: { ...options.headers, ...signMessage(this.keys, { routingKey, messageId, body }) },
      },
      options.timeoutMs ?? this.publishTimeoutMs,
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

  async declareQueue(spec: QueueSpec): Promise<void> {
    assertQueueSpec(spec);
    const model = await this.connection.waitForModel(this.publishTimeoutMs);
    const channel = await model.createChannel();
    try {
      await declareQueue(channel, spec);
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  isConnected(): boolean {
    return this.connection.current !== null;
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
    const guard = { trusted: this.keys.trusted, refused: this.refused };
    const consumer = new QueueConsumer(this.connection, this.logger, guard, spec, prefetch, resolveRetryPolicy(options.retry), mode);
    await consumer.start(this.publishTimeoutMs);
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

  private async shutdown(): Promise<void> {
    await Promise.allSettled([...this.consumers].map((consumer) => consumer.stop()));
    await this.publisher.close();
    await this.connection.close();
  }
}
