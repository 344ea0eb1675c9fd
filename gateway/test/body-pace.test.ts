import { createServer, type Server } from "node:http";
import { closeServer, listen } from "@meter/service-kit";
import { DEFAULT_BODY_PACE } from "../src/http/body-pace";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";
import { drip, outcomeOf, rawExchange, sleep } from "./support/raw-http";

/** A service stand-in that reads each body (after `stallMs`, if set) and says how many bytes came. */
class Sink {
  readonly seen: { path: string; bytes: number; complete: boolean }[] = [];
  stallMs = 0;
  private server: Server | undefined;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const record = { path: req.url ?? "", bytes: 0, complete: false };
      this.seen.push(record);
      req.pause();
      setTimeout(() => {
        req.on("data", (c: Buffer) => (record.bytes += c.length));
        req.on("end", () => {
          record.complete = true;
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ bytes: record.bytes }));
        });
        req.resume();
      }, this.stallMs);
    });
    this.url = `http://127.0.0.1:${await listen(this.server, 0, "127.0.0.1")}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    if (this.server) await closeServer(this.server);
  }
}

const KiB = 1024;
const MiB = 1024 * KiB;
/** The time a body is given, by the default pace: one rate window (the grace), and some slack for a loaded machine. */
const RATE_WINDOW_MS = DEFAULT_BODY_PACE.windowMs;

let g: GatewayHarness;
let text: Sink;
let files: Sink;
let key: string;

beforeAll(async () => {
  text = new Sink();
  files = new Sink();
  await text.start();
  await files.start();
  // One place per key and per service: a request holding one while its body drips would shut out every other.
  g = await startGateway({ services: { text: text.url, files: files.url }, keyMaxInFlight: 1, serviceMaxInFlight: 1 });
  ({ key } = await g.account({ scopes: ["text", "files:write"] }));
}, 60_000);
afterAll(async () => {
  await g?.close();
  await text?.stop();
  await files?.stop();
});
beforeEach(() => {
  text.seen.length = 0;
  files.seen.length = 0;
  files.stallMs = 0;
});

const messageHead = (headers: Record<string, string | number>) => ({
  method: "POST",
  path: "/v1/messages",
  headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": `pace-${Math.random()}`, ...headers },
});

function message(): Promise<{ status: number; body: unknown }> {
  return fetch(`${g.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": `ok-${Math.random()}` },
    body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
  }).then(async (res) => ({ status: res.status, body: await res.json() }));
}

function upload(size: number, send: Parameters<typeof rawExchange>[2]) {
  return rawExchange(
    g.url,
    { method: "PUT", path: "/v1/uploads/some-token", headers: { "content-type": "image/png", "content-length": size, "x-content-sha256": "0".repeat(64) } },
    send,
  );
}

describe("a JSON body dripping a byte a second", () => {
  it("is 408 request_timeout within about one rate window, and while it drips holds no in-flight place", async () => {
    const dripping = rawExchange(g.url, messageHead({ "content-length": 200 }), (socket, answered) => drip(socket, answered, 200, 1, 1000));
    await sleep(300);
    // The key and the text service each have one place; the drip must not be holding them.
    expect(await message()).toEqual({ status: 200, body: expect.any(Object) });
    expect(await message()).toEqual({ status: 200, body: expect.any(Object) });

    const answer = await dripping;
    expect(outcomeOf(answer)).toEqual({ status: 408, code: "request_timeout" });
    expect(answer.afterMs).toBeGreaterThanOrEqual(RATE_WINDOW_MS - 100);
    expect(answer.afterMs).toBeLessThan(RATE_WINDOW_MS + 3000);
    // Only the two whole requests reached the service.
    expect(text.seen.map((s) => s.complete)).toEqual([true, true]);
  }, 30_000);
});

describe("a JSON body that keeps a pace but does not end", () => {
  it("to the cabinet's API holds no place of the cabinet's either while it drips", async () => {
    const head = { method: "POST", path: "/cabinet/api/sign-in", headers: { "content-type": "application/json", "content-length": 200 } };
    const dripping = rawExchange(g.url, head, (socket, answered) => drip(socket, answered, 200, 1, 1000));
    await sleep(300);
    // The cabinet has one place here (SERVICE_MAX_IN_FLIGHT): the drip must leave it free.
    const me = await fetch(`${g.url}/cabinet/api/me`);
    expect([me.status, ((await me.json()) as { error: { code: string } }).error.code]).toEqual([401, "authentication_required"]);
    expect(outcomeOf(await dripping)).toEqual({ status: 408, code: "request_timeout" });
  }, 30_000);

  it("is 408 request_timeout at the body deadline", async () => {
    const answer = await rawExchange(g.url, messageHead({ "content-length": MiB }), (socket, answered) => drip(socket, answered, MiB, 4 * KiB, 250));
    expect(outcomeOf(answer)).toEqual({ status: 408, code: "request_timeout" });
    expect(answer.afterMs).toBeGreaterThanOrEqual(DEFAULT_BODY_PACE.timeoutMs - 100);
    expect(answer.afterMs).toBeLessThan(DEFAULT_BODY_PACE.timeoutMs + 3000);
    expect(text.seen).toEqual([]);
  }, 30_000);
});

describe("upload content (streamed to the files service)", () => {
  it("dripping is cut with 408 request_timeout within about one rate window, and its place is free again at once", async () => {
    const answer = await upload(MiB, (socket, answered) => drip(socket, answered, MiB, 1, 500));
    expect(outcomeOf(answer)).toEqual({ status: 408, code: "request_timeout" });
    expect(answer.afterMs).toBeLessThan(RATE_WINDOW_MS + 3000);
    // The service saw the upload cut short (it keeps nothing of it).
    await sleep(100);
    expect(files.seen).toEqual([{ path: "/v1/uploads/some-token", bytes: expect.any(Number), complete: false }]);
    expect(files.seen[0]!.bytes).toBeLessThan(100);

    const create = await fetch(`${g.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(create.status).toBe(200);
  }, 30_000);

  it("sent at a modest steady rate (32 KiB/s, in bursts) arrives whole", async () => {
    const size = 256 * KiB;
    const answer = await upload(size, (socket, answered) => drip(socket, answered, size, 16 * KiB, 500));
    expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({ status: 200, body: { bytes: size } });
  }, 30_000);

  it("sent fast to a service that stops reading for two rate windows is not blamed on the client", async () => {
    // Two windows: at least one of them passes whole without a byte read from the client.
    files.stallMs = 2 * RATE_WINDOW_MS + 1000;
    const size = 32 * MiB;
    const chunk = Buffer.alloc(64 * KiB, "y");
    const answer = await upload(size, async (socket, answered) => {
      for (let sent = 0; sent < size && !answered() && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk))
          await new Promise((r) => {
            socket.once("drain", r);
            socket.once("close", r);
          });
      }
    });
    expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({ status: 200, body: { bytes: size } });
    expect(answer.afterMs).toBeGreaterThanOrEqual(files.stallMs);
  }, 60_000);
});
