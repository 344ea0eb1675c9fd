export { connectBus, type Bus, type BusOptions, type PublishOptions, type ConsumeOptions, type ConsumeSingleOptions, type ConsumeBatchOptions } from "./bus";
export type { Consumer, MessageMeta, MessageHandler, BatchHandler, BatchItem, BatchOutcome } from "./consumer";
export type { ReconnectOptions } from "./connection";
export { BusUnavailableError, PublishNackedError, InvalidMessageError, NonRetryableError } from "./errors";
export { silentLogger, type BusLogger } from "./logger";
export { parseMessage, isRoutingKey } from "./catalog";
export { MessageHeaders } from "./message-headers";
export { DEFAULT_RETRY_POLICY, type RetryPolicy, type DeadLetterReason } from "./retry-policy";
export {
  EXCHANGE,
  UNROUTED_EXCHANGE,
  UNROUTED_QUEUE,
  UNROUTED_QUEUE_MAX_LENGTH,
  deadLetterQueueName,
  retryQueueName,
  movesExchangeName,
  type QueueSpec,
} from "./topology";
export { registerUnroutedGauge, UNROUTED_METRIC } from "./unrouted-metric";
export { REFUSED_METRIC } from "./refusal-metric";
export { signMessage, checkMessage, type SignedMessage, type MessageCheck, type RefusalReason } from "./message-signature";
export { outboxInsertSql, writeOutboxMessage, type OutboxDb, type OutboxInsert, type SqlExecutor } from "./outbox-sql";
export { startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from "./outbox-relay";
