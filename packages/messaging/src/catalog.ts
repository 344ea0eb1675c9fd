import { MessageCatalog, type MessagePayload, type RoutingKey } from "@meter/contracts";
import { InvalidMessageError } from "./errors";

export function isRoutingKey(value: string): value is RoutingKey {
  return Object.hasOwn(MessageCatalog, value);
}

/** Checks a payload against the catalog and returns the parsed copy (unknown keys stripped). */
export function parseMessage<K extends RoutingKey>(routingKey: K, payload: unknown): MessagePayload<K>;
export function parseMessage(routingKey: string, payload: unknown): MessagePayload<RoutingKey>;
export function parseMessage(routingKey: string, payload: unknown): MessagePayload<RoutingKey> {
  if (!isRoutingKey(routingKey)) throw new InvalidMessageError(routingKey, "routing key is not in the message catalog");
  const result = MessageCatalog[routingKey].safeParse(payload);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
    throw new InvalidMessageError(routingKey, issues.join("; "));
  }
  return result.data;
}
