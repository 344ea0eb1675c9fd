import { randomUUID } from "node:crypto";
import { MessageCatalog, type MessagePayload, type RoutingKey } from "@meter/contracts";
import { BusUnavailableError, PublishNackedError, type Bus, type PublishOptions } from "@meter/messaging";
import type { BillingClient } from "@meter/service-clients";
import { AppError, type Logger } from "@meter/service-kit";

/** billing-ledger's answers to a command that mean it is resolved already (the bus acks them too: the first resolution stands). */
const ALREADY_RESOLVED = new Set(["hold_already_resolved", "conflict"]);

/**
 * What the outbox relay publishes through (docs/api.md, "Allowances"). A hold command goes on the bus
 * when the broker takes it; when the broker cannot (down, or no confirm in time), it goes to
 * billing-ledger's hold-ops over HTTP instead, the same op, signed as this service. Until billing hears
 * of a request's settlement its whole estimate stays reserved, so a broker outage would otherwise lock
 * away the estimates of every request answered meanwhile and refuse customers who have the money.
 * Both ways are idempotent on the hold id in billing, so a command that went both ways moves money once;
 * a command neither took stays in the outbox and is tried again. Other messages wait for the broker.
 */
export class HoldCommandsAdapter {
  constructor(
    private readonly bus: Pick<Bus, "publish" | "isConnected">,
    private readonly billing: Pick<BillingClient, "resolve">,
    private readonly logger: Logger,
  ) {}

  async publish<K extends RoutingKey>(routingKey: K, payload: MessagePayload<K>, options: PublishOptions = {}): Promise<string> {
    const command = commandOf(routingKey, payload);
    if (!command) return this.bus.publish(routingKey, payload, options);
    if (this.bus.isConnected()) {
      try {
        return await this.bus.publish(routingKey, payload, options);
      } catch (e) {
        if (!(e instanceof BusUnavailableError || e instanceof PublishNackedError)) throw e;
        this.logger.warn({ err: e, hold: command.hold_id }, "the broker did not take a hold command; handing it to billing-ledger over HTTP");
      }
    }
    try {
      await this.billing.resolve(command);
    } catch (e) {
      if (!(e instanceof AppError && ALREADY_RESOLVED.has(e.code))) throw e;
      this.logger.warn({ err: e, hold: command.hold_id }, "hold command over HTTP: the hold was already resolved otherwise");
    }
    return options.messageId ?? randomUUID();
  }
}

type Command = Parameters<BillingClient["resolve"]>[0];

/** The hold-ops form of a settle or release command (validated as the bus would); undefined for any other message. */
function commandOf(routingKey: RoutingKey, payload: unknown): Command | undefined {
  if (routingKey === "billing.hold.settle") {
    const { version: _version, ...settle } = MessageCatalog["billing.hold.settle"].parse(payload);
    return { op: "settle", ...settle };
  }
  if (routingKey === "billing.hold.release") {
    const { version: _version, ...release } = MessageCatalog["billing.hold.release"].parse(payload);
    return { op: "release", ...release };
  }
  return undefined;
}
