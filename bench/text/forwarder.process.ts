import { Agent, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot } from "@meter/local-infra";

/**
 * The bare forwarder of `pnpm bench:text`: Express 5 and http-proxy-middleware in front of the fake
 * upstream, with a keep-alive agent, no body parsing, no auth, no billing, no logging. It is the floor
 * any gateway of this design pays for one hop. Both libraries are loaded from the gateway's own
 * dependencies, so the floor is built from exactly the versions the gateway runs.
 *
 * Usage: forwarder.process.ts <target base URL>. Prints `{ url, pid }` as one JSON line, then serves
 * until SIGTERM.
 */
type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
interface ExpressApp {
  disable(setting: string): void;
  use(handler: Handler): void;
  listen(port: number, host: string, cb: () => void): Server;
}

const fromGateway = createRequire(path.join(repoRoot(), "gateway", "package.json"));
const express = fromGateway("express") as () => ExpressApp;
const { createProxyMiddleware } = fromGateway("http-proxy-middleware") as {
  createProxyMiddleware(opts: { target: string; agent: Agent; changeOrigin: boolean; xfwd: boolean; proxyTimeout: number }): Handler;
};

const target = process.argv[2];
if (!target) throw new Error("usage: forwarder.process.ts <target base URL>");

const app = express();
app.disable("x-powered-by");
app.use(
  createProxyMiddleware({
    target,
    // The same agent settings as the gateway's service proxy (gateway/src/proxy/service-proxy.ts).
    agent: new Agent({ keepAlive: true, keepAliveMsecs: 10_000, timeout: 2_000 }),
    changeOrigin: false,
    xfwd: true,
    proxyTimeout: 180_000,
  }),
);
const server = app.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
server.keepAliveTimeout = 65_000;
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
