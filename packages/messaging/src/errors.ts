/** The broker could not be reached, or did not confirm, within the publish timeout; or the bus is closed. */
export class BusUnavailableError extends Error {
  override readonly name = "BusUnavailableError";
}

/**
 * A command's queue has not been declared by its consumer yet (it never ran on this broker): the command
 * was not published, so it cannot end in the unrouted queue; the outbox tries it again later.
 */
export class QueueNotDeclaredError extends Error {
  override readonly name = "QueueNotDeclaredError";
}

/**
 * The bus's exchanges are not declared on this broker yet: only the topology's owner (billing-ledger)
 * declares them, and every other deployable waits for it, connecting again until they exist.
 */
export class TopologyNotDeclaredError extends Error {
  override readonly name = "TopologyNotDeclaredError";
}

/** The broker refused a message (basic.nack): it was not stored and may be published again. */
export class PublishNackedError extends Error {
  override readonly name = "PublishNackedError";
}

/** A payload does not match the catalog's schema for its routing key, or the key is not in the catalog. */
export class InvalidMessageError extends Error {
  override readonly name = "InvalidMessageError";
  constructor(
    readonly routingKey: string,
    message: string,
  ) {
    super(`invalid message for "${routingKey}": ${message}`);
  }
}

/** Thrown by a handler when trying again cannot help: the message goes straight to the dead-letter queue. */
export class NonRetryableError extends Error {
  override readonly name = "NonRetryableError";
}

/** The text of whatever was thrown, for logs and the dead-letter headers. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === "string" ? err : (JSON.stringify(err) ?? String(err));
}
