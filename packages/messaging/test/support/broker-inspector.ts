import { connect, type Channel, type ChannelModel, type GetMessage, type Options } from "amqplib";

/**
 * A plain amqplib connection for looking into queues and putting raw bytes on the wire, around the bus.
 * It reconnects on its own, since tests close every connection in their vhost.
 */
export interface BrokerInspector {
  /** Takes (and acks) the next message on a queue, or null if it is empty. */
  take(queue: string): Promise<GetMessage | null>;
  messageCount(queue: string): Promise<number>;
  consumerCount(queue: string): Promise<number>;
  publishRaw(exchange: string, routingKey: string, content: string, options?: Options.Publish): Promise<void>;
  close(): Promise<void>;
}

export async function openInspector(url: string): Promise<BrokerInspector> {
  let model: ChannelModel | null = null;
  let channel: Channel | null = null;

  const ensure = async (): Promise<{ model: ChannelModel; channel: Channel }> => {
    if (!model) {
      const opened = await connect(url);
      opened.on("error", () => undefined);
      opened.once("close", () => {
        if (model === opened) model = channel = null;
      });
      model = opened;
    }
    if (!channel) {
      const created = await model.createChannel();
      created.on("error", () => undefined);
      created.once("close", () => {
        if (channel === created) channel = null;
      });
      channel = created;
    }
    return { model, channel };
  };
  await ensure();

  return {
    async take(queue) {
      const message = await (await ensure()).channel.get(queue, { noAck: true });
      return message === false ? null : message;
    },
    async messageCount(queue) {
      return (await (await ensure()).channel.checkQueue(queue)).messageCount;
    },
    async consumerCount(queue) {
      return (await (await ensure()).channel.checkQueue(queue)).consumerCount;
    },
    async publishRaw(exchange, routingKey, content, options = {}) {
      const confirm = await (await ensure()).model.createConfirmChannel();
      confirm.publish(exchange, routingKey, Buffer.from(content), { persistent: true, ...options });
      await confirm.waitForConfirms();
      await confirm.close();
    },
    async close() {
      const open = model;
      model = channel = null;
      await open?.close().catch(() => undefined);
    },
  };
}
