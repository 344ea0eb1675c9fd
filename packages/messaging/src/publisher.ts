import type { ChannelModel, ConfirmChannel, Options } from "amqplib";
import { publishConfirmed } from "./confirm";
import type { BusConnection } from "./connection";
import type { BusLogger } from "./logger";

interface OpenChannel {
  model: ChannelModel;
  channel: Promise<ConfirmChannel>;
}

/** Publishes on one shared confirm channel, reopened lazily after a reconnect or a channel error. */
export class Publisher {
  private open: OpenChannel | null = null;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly connection: BusConnection,
    private readonly logger: BusLogger,
  ) {}

  async publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish, timeoutMs: number): Promise<void> {
    const sending = (async () => {
      const channel = await this.channel(Date.now() + timeoutMs);
      // The confirm gets a window of its own: a message sent just before a shared deadline would time out
      // although the broker took it, and be published again.
      await publishConfirmed(channel, exchange, routingKey, content, options, timeoutMs);
    })();
    this.inFlight.add(sending);
    try {
      await sending;
    } finally {
      this.inFlight.delete(sending);
    }
  }

  /** Waits for publishes already under way, then closes the channel. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    const open = this.open;
    this.open = null;
    if (open) await open.channel.then((channel) => channel.close()).catch(() => undefined);
  }

  private async channel(deadline: number): Promise<ConfirmChannel> {
    const model = await this.connection.waitForModel(deadline - Date.now());
    const current = this.open;
    if (current?.model === model) return current.channel;
    const opening: OpenChannel = { model, channel: this.openChannel(model) };
    this.open = opening;
    const forget = (): void => {
      if (this.open === opening) this.open = null;
    };
    void opening.channel.then((channel) => channel.once("close", forget), forget);
    return opening.channel;
  }

  private async openChannel(model: ChannelModel): Promise<ConfirmChannel> {
    const channel = await model.createConfirmChannel();
    channel.on("error", (err: Error) => this.logger.warn({ err: err.message }, "publish channel error"));
    return channel;
  }
}
