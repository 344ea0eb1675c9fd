import { randomUUID } from "node:crypto";
import type { MessagePayload, RoutingKey } from "@meter/contracts";
import { parseMessage } from "./catalog";

/** What the outbox needs from a database handle; a Prisma client or its transaction client fits it. */
export interface SqlExecutor {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): PromiseLike<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<number>;
}

/** A Prisma client fits it: the relay claims and marks rows inside one interactive transaction. */
export interface OutboxDb extends SqlExecutor {
  $transaction<R>(fn: (tx: SqlExecutor) => Promise<R>, options?: { maxWait?: number; timeout?: number; synchronousCommit?: boolean }): PromiseLike<R>;
}

export interface OutboxInsert {
  sql: string;
  params: [messageId: string, routingKey: string, payloadJson: string];
  messageId: string;
}

const INSERT_SQL = "INSERT INTO outbox_messages (message_id, routing_key, payload) VALUES ($1::uuid, $2, $3::jsonb) ON CONFLICT (message_id) DO NOTHING";

/**
 * The statement that writes one message to the outbox, for the caller to run in the transaction that
 * makes the state change: `tx.$executeRawUnsafe(sql, ...params)`. The payload is checked against the
 * catalog here, so a bad message fails the transaction instead of reaching the relay. A message id that
 * is already in the table is skipped, so a deterministic id makes the write idempotent.
 */
export function outboxInsertSql<K extends RoutingKey>(routingKey: K, payload: MessagePayload<K>, messageId: string = randomUUID()): OutboxInsert {
  const parsed = parseMessage(routingKey, payload);
  return { sql: INSERT_SQL, params: [messageId, routingKey, JSON.stringify(parsed)], messageId };
}

/** Runs outboxInsertSql on the given transaction; resolves with the message id. */
export async function writeOutboxMessage<K extends RoutingKey>(
  tx: Pick<SqlExecutor, "$executeRawUnsafe">,
  routingKey: K,
  payload: MessagePayload<K>,
  options: { messageId?: string } = {},
): Promise<string> {
  const insert = outboxInsertSql(routingKey, payload, options.messageId);
  await tx.$executeRawUnsafe(insert.sql, ...insert.params);
  return insert.messageId;
}
