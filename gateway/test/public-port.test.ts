import { createServer, type Server } from "node:http";
import { Writable } from "node:stream";
import pino from "pino";
import { closeServer, listen } from "@meter/service-kit";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/** The access log as text: every line the gateway's logger wrote. */
class LogCapture extends Writable {
  text = "";
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString("utf8");
    done();
  }
}

/** A service stand-in that reads each request's body, then drops the connection without answering. */
async function startDropper(): Promise<{ server: Server; url: string; received: () => number }> {
  let received = 0;
  const server = createServer((req) => {
    req.on("data", (c: Buffer) => (received += c.length));
    req.on("end", () => req.socket.destroy());
  });
  const port = await listen(server, 0, "127.0.0.1");
  return { server, url: `http://127.0.0.1:${port}`, received: () => received };
}

let g: GatewayHarness;
let dropper: Awaited<ReturnType<typeof startDropper>>;
const log = new LogCapture();

beforeAll(async () => {
  dropper = await startDropper();
  g = await startGateway({ services: { text: dropper.url, files: dropper.url }, logger: pino({ level: "info" }, log) });
});
afterAll(async () => {
  await g.close();
  await closeServer(dropper.server);
});

async function errorOf(res: Response): Promise<{ code: string; message: string }> {
  return ((await res.json()) as { error: { code: string; message: string } }).error;
}

describe("the public port", () => {
  it("answers /healthz and nothing else of the internal endpoints", async () => {
    expect((await fetch(`${g.url}/healthz`)).status).toBe(200);
    for (const path of ["/readyz", "/metrics", "/READYZ", "/metrics/", "/readyz?verbose=1"]) {
      const res = await fetch(`${g.url}${path}`);
      expect({ path, status: res.status, code: (await errorOf(res)).code }).toEqual({ path, status: 404, code: "not_found" });
    }
  });
});

describe("the internal port", () => {
  it("answers /readyz and /metrics", async () => {
    const ready = await fetch(`${g.internalUrl}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: "ok", checks: {} } });
    const metrics = await fetch(`${g.internalUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('service="gateway"');
  });

  it("stays ready while billing-ledger is down: readiness depends on no other service", async () => {
    await g.stopBillingHttp();
    try {
      const ready = await fetch(`${g.internalUrl}/readyz`);
      expect({ status: ready.status, body: (await ready.json()) as unknown }).toEqual({ status: 200, body: { status: "ok", checks: {} } });
    } finally {
      await g.startBillingHttp();
    }
  });
});

describe("the access log", () => {
  it("never writes an upload-link token, a query string or a key", async () => {
    const { key } = await g.account({ scopes: ["text", "files:read"] });
    await fetch(`${g.url}/v1/uploads/upl-token-secret-123?sig=query-secret-456`, { method: "PUT", body: "x" });
    await fetch(`${g.url}/v1/files?api_key=${key}`, { headers: { authorization: `Bearer ${key}` } });
    await fetch(`${g.url}/v1/chat/quote`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: "{}" });
    // A request's line is written when its answer is over, which the client may see a moment before.
    for (let tries = 0; !(log.text.includes("/v1/uploads/[redacted]") && log.text.includes("/v1/files?[redacted]")) && tries < 100; tries++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(log.text).toContain("/v1/uploads/[redacted]");
    expect(log.text).toContain("/v1/files?[redacted]");
    for (const secret of ["upl-token-secret-123", "query-secret-456", key]) expect(log.text).not.toContain(secret);
  });
});

describe("answers the gateway writes itself", () => {
  it("a paid request whose answer was lost is 202 in the contract's pending shape, with Retry-After", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    const res = await fetch(`${g.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key, "idempotency-key": "lost-1" },
      body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(202);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await res.json()).toEqual({
      id: res.headers.get("x-request-id"),
      type: "pending",
      status: "reconciling",
      billing: { status: "reserved", estimated_cost_microrub: null, cost_microrub: null },
    });
  });

  it("an upload whose bytes reached the service before the connection broke is 503 without claiming nothing happened", async () => {
    const before = dropper.received();
    const res = await fetch(`${g.url}/v1/uploads/some-token`, { method: "PUT", body: Buffer.alloc(64 * 1024, 1) });
    expect(dropper.received() - before).toBe(64 * 1024);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    const error = await errorOf(res);
    expect(error.code).toBe("service_unavailable");
    expect(error.message).not.toContain("nothing was reserved");
  });

  it("a request that never reached its service is 503 saying nothing was reserved, with Retry-After", async () => {
    const { key } = await g.account({ scopes: ["mcp:read"] });
    const res = await fetch(`${g.url}/mcp`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await errorOf(res)).toMatchObject({ code: "service_unavailable", message: expect.stringContaining("nothing was reserved") });
  });
});
