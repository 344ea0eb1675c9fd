import { CommandQueues } from "@meter/contracts";
import { connect, type ChannelModel } from "amqplib";
import { deadLetterQueueName, UNROUTED_QUEUE } from "./topology";

/** What a queue is for, as an operator reads it: a consumer's work, its dead letters, or what no queue took. */
export type QueueRole = "work" | "dead_letter" | "unrouted";

export interface WatchedQueue {
  name: string;
  role: QueueRole;
}

/** One queue as the broker sees it now; the counts are null while nobody has declared it yet. */
export interface QueueReading extends WatchedQueue {
  /** Messages ready for delivery (not those delivered and not yet acked). */
  messages: number | null;
  consumers: number | null;
}

/**
 * The durable queues of the topology an operator watches: each command queue, its dead-letter queue,
 * and the unrouted queue. Delay queues are left out: their names follow each consumer's retry settings.
 */
export function watchedQueues(): WatchedQueue[] {
  return [
    ...Object.values(CommandQueues).flatMap(({ queue }): WatchedQueue[] => [
      { name: queue, role: "work" },
      { name: deadLetterQueueName(queue), role: "dead_letter" },
    ]),
    { name: UNROUTED_QUEUE, role: "unrouted" },
  ];
}

/**
 * A queue's ready messages and consumers by a passive declaration (which needs no right on the queue);
 * null when it is not declared. Its own channel: the broker closes a channel on a 404.
 */
export async function queueCounts(model: ChannelModel, queue: string): Promise<{ messages: number; consumers: number } | null> {
  const channel = await model.createChannel();
  channel.on("error", () => undefined);
  try {
    const { messageCount, consumerCount } = await channel.checkQueue(queue);
    return { messages: messageCount, consumers: consumerCount };
  } catch (err) {
    if ((err as { code?: unknown }).code === 404) return null;
    throw err;
  } finally {
    await channel.close().catch(() => undefined);
  }
}

/**
 * Connects to the broker anew (so the answer is about now, not about a connection made earlier), reads
 * every watched queue and closes. Rejects when the broker cannot be reached or answer within timeoutMs.
 */
export async function readWatchedQueues(url: string, timeoutMs: number): Promise<QueueReading[]> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  let model: ChannelModel | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      late = true;
      reject(new Error(`the broker did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  const read = async (): Promise<QueueReading[]> => {
    const opened = await connect(url, { timeout: timeoutMs, clientProperties: { connection_name: "queue census" } });
    opened.on("error", () => undefined);
    model = opened;
    // Connected after the deadline: the finally below has run already and nobody waits for the answer.
    if (late) {
      await opened.close().catch(() => undefined);
      return [];
    }
    return Promise.all(watchedQueues().map(async (q) => ({ ...q, ...((await queueCounts(opened, q.name)) ?? { messages: null, consumers: null }) })));
  };
  try {
    return await Promise.race([read(), deadline]);
  } finally {
    clearTimeout(timer);
    // Assigned inside read(), which the compiler's narrowing does not follow.
    await (model as ChannelModel | undefined)?.close().catch(() => undefined);
  }
}
