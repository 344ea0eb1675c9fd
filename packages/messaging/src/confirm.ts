import type { ConfirmChannel, Options } from "amqplib";
import { BusUnavailableError, PublishNackedError } from "./errors";

/** Publishes on a confirm channel and settles when the broker has taken responsibility for the message. */
export function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: Options.Publish,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(() => finish(new BusUnavailableError(`the broker did not confirm within ${timeoutMs} ms`)), timeoutMs);
    try {
      channel.publish(exchange, routingKey, content, options, (err: unknown) => {
        if (err === null || err === undefined) finish();
        else if (err instanceof Error && err.message === "message nacked") finish(new PublishNackedError("the broker refused the message"));
        else finish(new BusUnavailableError(`the channel closed before the broker confirmed: ${err instanceof Error ? err.message : String(err)}`));
      });
    } catch (err) {
      finish(new BusUnavailableError(`could not publish: ${err instanceof Error ? err.message : String(err)}`));
    }
  });
}
