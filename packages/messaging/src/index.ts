export { connectBus, type Bus, type BusOptions, type PublishOptions, type ConsumeOptions, type ConsumeSingleOptions, type ConsumeBatchOptions } from "./bus";
export type { Consumer, MessageMeta, MessageHandler, BatchHandler, BatchItem, BatchOutcome } from "./consumer";
export type { ReconnectOptions } from "./connection";
export { BusUnavailableError, QueueNotDeclaredError, TopologyNotDeclaredError, PublishNackedError, InvalidMessageError, NonRetryableError } from "./errors";
export { silentLogger, type BusLogger } from "./logger";
export { parseMessage, isRoutingKey } from "./catalog";
export { MessageHeaders } from "./message-headers";
export { DEFAULT_RETRY_POLICY, type RetryPolicy, type DeadLetterReason } from "./retry-policy";
export {
  EXCHANGE,
  TOPOLOGY_OWNER,
  UNROUTED_EXCHANGE,
  UNROUTED_QUEUE,
  UNROUTED_QUEUE_MAX_LENGTH,
  DELIVERY_LIMIT,
  DEAD_LETTER_QUEUE_MAX_LENGTH,
  deadLetterQueueName,
  retryQueueName,
  movesExchangeName,
  type QueueSpec,
} from "./topology";
export { registerUnroutedGauge, UNROUTED_METRIC } from "./unrouted-metric";
export { DEAD_LETTERED_METRIC, REFUSED_METRIC } from "./refusal-metric";
export { DEAD_LETTER_METRIC } from "./dead-letter-metric";
export {
  signMessage,
  checkMessage,
  MessageSeal,
  BUS_COMMAND_SIGN,
  type BusCommandSign,
  type SignedMessage,
  type MessageCheck,
  type RefusalReason,
} from "./message-signature";
export { outboxInsertSql, writeOutboxMessage, type OutboxDb, type OutboxInsert, type SqlExecutor } from "./outbox-sql";
export { startOutboxRelay, DIRECT_PUBLISH_LEASE_MS, type OutboxRelay, type OutboxRelayOptions, type OutboxRow } from "./outbox-relay";
export { deadLetterCount, showDeadLetters, replayDeadLetters, purgeDeadLetters, workQueueOf, type DeadLetter } from "./dead-letters";
export { watchedQueues, queueCounts, readWatchedQueues, type QueueRole, type WatchedQueue, type QueueReading } from "./queue-census";
