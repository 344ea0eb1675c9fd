import type { RoutingKey } from "@meter/contracts";
import type { Channel } from "amqplib";

/** The one topic exchange every message is published to, with its routing key from the catalog. */
export const EXCHANGE = "meter";
/** Where the broker puts a message that no queue is bound to, instead of dropping it (an alternate exchange). */
export const UNROUTED_EXCHANGE = "meter.unrouted";
export const UNROUTED_QUEUE = "meter.unrouted";

export function deadLetterQueueName(queue: string): string {
  return `${queue}.dlq`;
}

export function retryQueueName(queue: string, delayMs: number): string {
  return `${queue}.retry.${delayMs}`;
}

export interface QueueSpec {
  queue: string;
  routingKeys: readonly RoutingKey[];
}

export function assertQueueSpec({ queue, routingKeys }: QueueSpec): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(queue)) throw new TypeError(`bad queue name "${queue}"`);
  if (/\.(dlq|retry\.\d+)$/.test(queue)) throw new TypeError(`queue name "${queue}" collides with a retry or dead-letter queue`);
  if (routingKeys.length === 0) throw new TypeError(`queue "${queue}" needs at least one routing key`);
}

export async function declareExchanges(channel: Channel): Promise<void> {
  await channel.assertExchange(UNROUTED_EXCHANGE, "fanout", { durable: true });
  await channel.assertQueue(UNROUTED_QUEUE, { durable: true });
  await channel.bindQueue(UNROUTED_QUEUE, UNROUTED_EXCHANGE, "");
  await channel.assertExchange(EXCHANGE, "topic", { durable: true, alternateExchange: UNROUTED_EXCHANGE });
}

/** The queue, its bindings and its dead-letter queue: enough to hold messages before any consumer starts. */
export async function declareQueue(channel: Channel, spec: QueueSpec): Promise<void> {
  assertQueueSpec(spec);
  await channel.assertQueue(deadLetterQueueName(spec.queue), { durable: true });
  await channel.assertQueue(spec.queue, { durable: true });
  for (const key of spec.routingKeys) await channel.bindQueue(spec.queue, EXCHANGE, key);
}

/**
 * One delay queue per backoff step. Every message in it has the same TTL, so expiry happens at the head
 * and nothing waits behind a longer delay; on expiry the broker dead-letters it back to the work queue
 * through the default exchange.
 */
export async function declareRetryQueues(channel: Channel, queue: string, delaysMs: readonly number[]): Promise<void> {
  for (const delayMs of new Set(delaysMs)) {
    await channel.assertQueue(retryQueueName(queue, delayMs), {
      durable: true,
      messageTtl: delayMs,
      deadLetterExchange: "",
      deadLetterRoutingKey: queue,
    });
  }
}
