import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

/**
 * A TCP proxy between the services and the broker, to take the broker away from them in a test
 * without stopping the machine's broker (other runs share it): `cut()` drops every connection through
 * it and refuses new ones until `restore()`, as a broker that went down would.
 */
export interface BrokerProxy {
  /** The amqp URL through the proxy for a URL to the broker (same user, password and vhost). */
  urlOf(brokerUrl: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startBrokerProxy(target: { host: string; port: number } = brokerAddress()): Promise<BrokerProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    urlOf(brokerUrl) {
      const url = new URL(brokerUrl);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.href;
    },
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      cut = false;
    },
    async close() {
      cut = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function brokerAddress(): { host: string; port: number } {
  const url = new URL(process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  return { host: url.hostname, port: Number(url.port || 5672) };
}
