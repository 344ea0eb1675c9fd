import type { Deployable, MessagePayload, RoutingKey } from "@meter/contracts";
import type { ChannelModel, ConfirmChannel, ConsumeMessage } from "amqplib";
import { isRoutingKey, parseMessage } from "./catalog";
import type { BusConnection } from "./connection";
import { errorMessage } from "./errors";
import type { BusLogger } from "./logger";
import { applicationHeaders, MessageHeaders, readAttempt, readRoutingKey, type HeaderTable } from "./message-headers";
import type { MessageSeal } from "./message-signature";
import type { DeadLetterCounter, RefusalCounter } from "./refusal-metric";
import { decideOnFailure, reachableDelays, type DeadLetterReason, type RetryPolicy } from "./retry-policy";
import { deadLetterQueueName, declareConsumerQueues, declareExclusiveQueue, movesExchangeName, republish, retryQueueName, type QueueSpec } from "./topology";

export interface MessageMeta<K extends RoutingKey = RoutingKey> {
  messageId: string;
  routingKey: K;
  /** The deployable that published it, as its signature proves (a producer the catalog names for the key). */
  producer: Deployable;
  /** 1 on the first delivery to a handler, 2 on the first retry, and so on. */
  attempt: number;
  /** The broker delivered it before (a consumer died or its channel closed before acking): it may be done already. */
  redelivered: boolean;
  /** The publisher's headers, without the bus's bookkeeping. */
  headers: HeaderTable;
}

export interface BatchItem<K extends RoutingKey = RoutingKey> {
  payload: MessagePayload<K>;
  meta: MessageMeta<K>;
}

/** One per batch item, in the same order: ok acks it; an error retries it, or dead-letters it if NonRetryableError. */
export type BatchOutcome = { ok: true } | { ok: false; error: unknown };

export type MessageHandler<K extends RoutingKey> = (payload: MessagePayload<K>, meta: MessageMeta<K>) => Promise<void>;
export type BatchHandler<K extends RoutingKey> = (items: BatchItem<K>[]) => Promise<BatchOutcome[]>;

export type ConsumerMode<K extends RoutingKey> = { kind: "single"; handler: MessageHandler<K> } | { kind: "batch"; maxBatch: number; handler: BatchHandler<K> };

/** What a consumer checks each delivery against, and where it counts what it refuses. */
export interface ConsumerGuard {
  /** Checks each delivery's signature or MAC, with the keys of INTERNAL_PUBLIC_KEYS. */
  seal: MessageSeal;
  refused: RefusalCounter;
  deadLettered: DeadLetterCounter;
}

export interface Consumer {
  readonly queue: string;
  /** Stops new deliveries, waits for the handlers under way to finish and settle, then closes the channel. */
  stop(): Promise<void>;
}

interface Delivery<K extends RoutingKey> extends BatchItem<K> {
  channel: ConfirmChannel;
  message: ConsumeMessage;
}

type Decoded<K extends RoutingKey> = { ok: true; item: BatchItem<K> } | { ok: false; reason: DeadLetterReason; error: string };

const REATTACH_DELAY_MS = 1_000;
const MAX_ERROR_HEADER = 1_000;

/**
 * A queue's consumer: its own confirm channel, reattached after every reconnect. Each delivery's signature
 * and producer are checked (a retry's too: the copy keeps them) and its payload against the catalog; it is
 * then handed to the handler and acked, sent to a delay queue, or dead-lettered.
 * A copy is always confirmed by the broker before the original is acked, so a crash in between duplicates
 * a message but never loses one.
 */
export class QueueConsumer<K extends RoutingKey> implements Consumer {
  private channel: ConfirmChannel | null = null;
  private channelModel: ChannelModel | null = null;
  private consumerTag: string | null = null;
  private attachChain: Promise<void> = Promise.resolve();
  private reattachTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private readonly keys: ReadonlySet<string>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly pending: Delivery<K>[] = [];
  private draining = false;
  private readonly closedChannels = new WeakSet<ConfirmChannel>();

  constructor(
    private readonly connection: BusConnection,
    private readonly logger: BusLogger,
    private readonly guard: ConsumerGuard,
    private readonly spec: QueueSpec & { routingKeys: readonly K[]; exclusive: boolean },
    private readonly prefetch: number,
    private readonly policy: RetryPolicy,
    private readonly mode: ConsumerMode<K>,
  ) {
    this.keys = new Set(spec.routingKeys);
  }

  get queue(): string {
    return this.spec.queue;
  }

  /**
   * Attaches on the current connection (waiting up to timeoutMs for one) and on every later one; while
   * the topology is not declared yet, on the first connection once it is.
   */
  async start(timeoutMs: number): Promise<void> {
    this.unsubscribe = this.connection.onConnected((model) => void this.attachQuietly(model));
    try {
      const model = await this.connection.waitForBroker(timeoutMs);
      if (model) await this.attach(model);
    } catch (err) {
      this.stopped = true;
      this.unsubscribe();
      throw err;
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    if (this.reattachTimer) clearTimeout(this.reattachTimer);
    await this.attachChain;
    const channel = this.channel;
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.channel = null;
    if (channel) await channel.close().catch(() => undefined);
  }

  private attach(model: ChannelModel): Promise<void> {
    const attaching = this.attachChain.then(() => this.attachNow(model));
    this.attachChain = attaching.catch(() => undefined);
    return attaching;
  }

  private async attachQuietly(model: ChannelModel): Promise<void> {
    try {
      await this.attach(model);
    } catch (err) {
      this.logger.warn({ queue: this.queue, err: errorMessage(err) }, "consumer could not attach, trying again");
      this.scheduleReattach();
    }
  }

  private scheduleReattach(): void {
    if (this.stopped || this.reattachTimer) return;
    this.reattachTimer = setTimeout(() => {
      this.reattachTimer = null;
      // Without a connection there is nothing to do now: the next 'connected' event attaches.
      const model = this.connection.current;
      if (model) void this.attachQuietly(model);
    }, REATTACH_DELAY_MS);
  }

  private async attachNow(model: ChannelModel): Promise<void> {
    if (this.stopped || (this.channel && this.channelModel === model)) return;
    if (model !== this.connection.current) return;
    if (!this.spec.exclusive) await declareConsumerQueues(model, this.spec, reachableDelays(this.policy));
    const channel = await model.createConfirmChannel();
    channel.on("error", (err: Error) => this.logger.warn({ queue: this.queue, err: err.message }, "consumer channel error"));
    channel.on("close", () => this.onChannelClosed(channel));
    try {
      const queue = this.spec.exclusive ? await declareExclusiveQueue(channel, this.spec) : this.queue;
      await channel.prefetch(this.prefetch);
      this.channel = channel;
      this.channelModel = model;
      const { consumerTag } = await channel.consume(queue, (message) => this.onMessage(channel, message));
      this.consumerTag = consumerTag;
      this.logger.info({ queue }, "consumer attached");
    } catch (err) {
      if (this.channel === channel) this.channel = null;
      await channel.close().catch(() => undefined);
      throw err;
    }
  }

  private onChannelClosed(channel: ConfirmChannel): void {
    this.closedChannels.add(channel);
    if (this.channel !== channel) return;
    this.channel = null;
    this.consumerTag = null;
    if (!this.stopped) this.scheduleReattach();
  }

  private onMessage(channel: ConfirmChannel, message: ConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled us (the queue was deleted): reopen, which declares the queue again.
      this.logger.warn({ queue: this.queue }, "consumer cancelled by the broker");
      void channel.close().catch(() => undefined);
      return;
    }
    const decoded = this.decode(message);
    if (!decoded.ok) {
      const routingKey = readRoutingKey(message);
      this.guard.refused.inc({ routing_key: isRoutingKey(routingKey) ? routingKey : "unknown", reason: decoded.reason });
      this.track(this.deadLetter(channel, message, decoded.reason, decoded.error));
      return;
    }
    const delivery: Delivery<K> = { ...decoded.item, channel, message };
    if (this.mode.kind === "single") {
      this.track(this.handleOne(this.mode.handler, delivery));
    } else {
      this.pending.push(delivery);
      if (!this.draining) {
        this.draining = true;
        // setImmediate lets every delivery already read from the socket arrive first, so the batch holds
        // what is there now without waiting for more.
        this.track(new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain()));
      }
    }
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch((err: unknown) => this.logger.error({ queue: this.queue, err: errorMessage(err) }, "consumer failed to settle a message"));
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  private decode(message: ConsumeMessage): Decoded<K> {
    const messageId: unknown = message.properties.messageId;
    if (typeof messageId !== "string" || messageId === "") return { ok: false, reason: "missing-message-id", error: "no message id" };
    const routingKey = readRoutingKey(message);
    if (!isRoutingKey(routingKey)) return { ok: false, reason: "unknown-routing-key", error: `"${routingKey}" is not in the catalog` };
    if (!this.keys.has(routingKey)) return { ok: false, reason: "unexpected-routing-key", error: `"${routingKey}" is not consumed from ${this.queue}` };
    const key = routingKey as K;
    // Before the body is even parsed: what a producer the catalog names did not sign is nobody's word.
    const signed = this.guard.seal.check(message.properties.headers ?? {}, { routingKey: key, messageId, body: message.content });
    if (!signed.ok) return signed;
    let body: unknown;
    try {
      body = JSON.parse(message.content.toString("utf8"));
    } catch (err) {
      return { ok: false, reason: "invalid-json", error: errorMessage(err) };
    }
    let payload: MessagePayload<K>;
    try {
      payload = parseMessage(key, body);
    } catch (err) {
      return { ok: false, reason: "invalid-payload", error: errorMessage(err) };
    }
    const meta: MessageMeta<K> = {
      messageId,
      routingKey: key,
      producer: signed.producer,
      attempt: readAttempt(message),
      redelivered: message.fields.redelivered,
      headers: applicationHeaders(message),
    };
    return { ok: true, item: { payload, meta } };
  }

  private async handleOne(handler: MessageHandler<K>, delivery: Delivery<K>): Promise<void> {
    try {
      await handler(delivery.payload, delivery.meta);
    } catch (err) {
      await this.fail(delivery, err);
      return;
    }
    this.ack(delivery.channel, delivery.message);
  }

  private async drain(): Promise<void> {
    if (this.mode.kind !== "batch") return;
    const { handler, maxBatch } = this.mode;
    try {
      while (this.pending.length > 0) await this.handleBatch(handler, this.pending.splice(0, maxBatch));
    } finally {
      this.draining = false;
    }
  }

  private async handleBatch(handler: BatchHandler<K>, batch: Delivery<K>[]): Promise<void> {
    let outcomes: BatchOutcome[];
    try {
      outcomes = await handler(batch.map(({ payload, meta }) => ({ payload, meta })));
      if (outcomes.length !== batch.length) throw new Error(`batch handler returned ${outcomes.length} outcomes for ${batch.length} items`);
    } catch (err) {
      outcomes = batch.map(() => ({ ok: false, error: err }));
    }
    await Promise.all(
      batch.map(async (delivery, index) => {
        const outcome = outcomes[index];
        if (outcome?.ok) this.ack(delivery.channel, delivery.message);
        else await this.fail(delivery, outcome?.error);
      }),
    );
  }

  private async fail(delivery: Delivery<K>, error: unknown): Promise<void> {
    const { meta, channel, message } = delivery;
    const log = { queue: this.queue, messageId: meta.messageId, routingKey: meta.routingKey, attempt: meta.attempt, err: errorMessage(error) };
    if (this.spec.exclusive) {
      this.logger.error(log, "handler failed; an exclusive queue has no retries, message dropped");
      this.ack(channel, message);
      return;
    }
    const decision = decideOnFailure(this.policy, meta.attempt, error);
    if (decision.action === "dead-letter") {
      await this.deadLetter(channel, message, decision.reason, errorMessage(error));
      return;
    }
    this.logger.warn({ ...log, retryInMs: decision.delayMs }, "handler failed, retrying later");
    await this.moveTo(channel, message, retryQueueName(this.queue, decision.delayMs), {
      [MessageHeaders.attempt]: meta.attempt + 1,
    });
  }

  private async deadLetter(channel: ConfirmChannel, message: ConsumeMessage, reason: DeadLetterReason, error: string): Promise<void> {
    const log = { queue: this.queue, messageId: message.properties.messageId as unknown, routingKey: readRoutingKey(message), reason, err: error };
    if (this.spec.exclusive) {
      this.logger.error(log, "message refused; an exclusive queue has no dead-letter queue, message dropped");
      this.ack(channel, message);
      return;
    }
    this.logger.error(log, "message dead-lettered");
    this.guard.deadLettered.inc({ queue: this.queue, reason });
    await this.moveTo(channel, message, deadLetterQueueName(this.queue), {
      [MessageHeaders.attempt]: readAttempt(message),
      [MessageHeaders.deadReason]: reason,
      [MessageHeaders.deadError]: error.slice(0, MAX_ERROR_HEADER),
      [MessageHeaders.deadQueue]: this.queue,
      [MessageHeaders.deadAt]: new Date().toISOString(),
    });
  }

  /** Puts a copy on another of this consumer's queues through its moves exchange and acks the original once the copy is confirmed. */
  private async moveTo(channel: ConfirmChannel, message: ConsumeMessage, queue: string, headers: HeaderTable): Promise<void> {
    try {
      await republish(channel, movesExchangeName(this.queue), queue, message, headers);
    } catch (err) {
      // Unacked, the original comes back: on its own when the channel is gone, at once if we nack it.
      this.logger.warn({ queue: this.queue, target: queue, err: errorMessage(err) }, "could not move a message, returning it to its queue");
      this.settle(channel, () => channel.nack(message, false, true));
      return;
    }
    this.ack(channel, message);
  }

  private ack(channel: ConfirmChannel, message: ConsumeMessage): void {
    this.settle(channel, () => channel.ack(message));
  }

  private settle(channel: ConfirmChannel, action: () => void): void {
    // A delivery can only be settled on the channel it came from; once that is gone the broker redelivers it.
    if (this.closedChannels.has(channel)) return;
    try {
      action();
    } catch (err) {
      this.logger.warn({ queue: this.queue, err: errorMessage(err) }, "could not settle a delivery; the broker will redeliver it");
    }
  }
}
