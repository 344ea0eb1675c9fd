import { Agent, request as httpRequest } from "node:http";
import { DEFAULT_LINGER } from "../src/http/lingering-close";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";
import { sendWholeThenRead } from "./support/raw-http";

let g: GatewayHarness;
let key: string;
const keepAlive = new Agent({ keepAlive: true });

beforeAll(async () => {
  // Every request asks billing for its key, so the answer comes while the client is deep in its body.
  g = await startGateway({ keyCacheTtlMs: 0 });
  ({ key } = await g.account({ scopes: ["text"] }));
});
afterAll(async () => {
  keepAlive.destroy();
  await g.close();
});

const MiB = 1024 * 1024;

interface Answer {
  status?: number;
  code?: string;
  error?: string;
}

/**
 * POSTs `total` bytes in 64 KiB writes, yielding to the event loop every half MiB as a real uploader
 * does, and resolves with the answer the client could read, or the error it got instead of one.
 */
function upload(path: string, total: number, headers: Record<string, string | number>, agent: Agent | false): Promise<Answer> {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, "x");
    const req = httpRequest(`${g.url}${path}`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": total, ...headers } });
    let error: string | undefined;
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => {
        resolve({ status: res.statusCode, code: (JSON.parse(body) as { error?: { code: string } }).error?.code });
        // Node's client stops writing once a keep-alive response has ended; nothing more to learn here.
        req.destroy();
      });
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
    });
    req.on("close", () => resolve({ error: error ?? "closed without an answer" }));
    let sent = 0;
    const pump = (): void => {
      while (sent < total && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", () => setImmediate(pump));
          return;
        }
        if (sent % (MiB / 2) === 0) {
          setImmediate(pump);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}

/**
 * Sends a chunked body (no declared length) in 64 KiB writes until an answer arrives, giving up at
 * `cap` bytes, and resolves with the answer and how much had been sent when it came.
 */
function chunkedUntilAnswered(path: string, cap: number, headers: Record<string, string>): Promise<Answer & { sentBeforeAnswer: number; finished: boolean }> {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, "x");
    const req = httpRequest(`${g.url}${path}`, { method: "POST", agent: false, headers: { "content-type": "application/json", ...headers } });
    let sent = 0;
    let finished = false;
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const sentBeforeAnswer = sent;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => {
        resolve({ status: res.statusCode, code: (JSON.parse(body) as { error?: { code: string } }).error?.code, sentBeforeAnswer, finished });
        req.destroy();
      });
    });
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, sentBeforeAnswer: sent, finished }));
    const pump = (): void => {
      while (!answered && sent < cap && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", () => setImmediate(pump));
          return;
        }
      }
      if (!answered && !req.destroyed) {
        finished = true;
        req.end();
      }
    };
    pump();
  });
}

describe("an answer before the whole body was read (413 on a declared length over the limit)", () => {
  const tooLarge = { status: 413, code: "payload_too_large" };

  it("reaches a client still writing 11 MiB that asked to close the connection, every time", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await upload("/v1/messages", 11 * MiB, { "x-api-key": key, "idempotency-key": `big-${i}` }, false));
    expect(answers).toEqual(Array.from({ length: 20 }, () => tooLarge));
  });

  it("reaches a client still writing 11 MiB on a keep-alive connection, every time", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await upload("/v1/messages", 11 * MiB, { "x-api-key": key, "idempotency-key": `big-ka-${i}` }, keepAlive));
    expect(answers).toEqual(Array.from({ length: 20 }, () => tooLarge));
  });
});

describe("the connection an early answer was given on", () => {
  it(
    "is closed (Connection: close), so a keep-alive client's next request goes on a fresh one and is not cut",
    async () => {
      const connection = await new Promise<string | undefined>((resolve) => {
        const req = httpRequest(`${g.url}/v1/messages`, {
          method: "POST",
          agent: keepAlive,
          headers: { "x-api-key": key, "idempotency-key": "big-then-next", "content-type": "application/json", "content-length": 11 * MiB },
        });
        req.on("response", (res) => {
          expect(res.statusCode).toBe(413);
          resolve(res.headers.connection);
          res.resume();
        });
        req.on("error", () => undefined);
        req.write(Buffer.alloc(64 * 1024, "x"));
      });
      expect(connection).toBe("close");
      // Longer than the drain's time bound: a reused connection would have been cut by now.
      await new Promise((r) => setTimeout(r, DEFAULT_LINGER.maxMs + 500));
      const next = await new Promise<number | string>((resolve) => {
        const req = httpRequest(`${g.url}/v1/models`, { agent: keepAlive, headers: { authorization: `Bearer ${key}` } });
        req.on("response", (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
        req.end();
      });
      expect(next).toBe(200);
    },
    DEFAULT_LINGER.maxMs + 30_000,
  );
});

describe("a chunked body over the limit", () => {
  it("is refused as soon as it passes the limit, while the client is still sending", async () => {
    const answer = await chunkedUntilAnswered("/v1/messages", 64 * MiB, { "x-api-key": key, "idempotency-key": "chunked-big" });
    expect({ status: answer.status, code: answer.code, finished: answer.finished }).toEqual({ status: 413, code: "payload_too_large", finished: false });
    expect(answer.sentBeforeAnswer).toBeLessThan(64 * MiB);
  });
});

/**
 * docs/api.md, "Limits and overload": a client that overshoots a body limit by up to the largest body
 * the API documents (a 50 MiB file) reads its 413, even one that sends its whole body before it reads
 * (EPIPE, had the gateway cut it short); a client sending far more is cut off within the drain's bounds.
 */
describe("a client over the 10 MiB limit by up to the largest documented body (50 MiB)", () => {
  const headers = () => ({ "content-type": "application/json", "x-api-key": key });
  const tooLarge = { status: 413, code: "payload_too_large" };

  it("reads its 413, several at once, declared or chunked, each writing all 60 MiB before it reads", async () => {
    const clients = [
      ...Array.from({ length: 4 }, () => sendWholeThenRead(g.url, { path: "/v1/messages", headers: headers() }, 60 * MiB)),
      ...Array.from({ length: 2 }, () => sendWholeThenRead(g.url, { path: "/v1/messages", headers: headers() }, 60 * MiB, { chunked: true })),
    ];
    const results = await Promise.all(clients);
    expect(results.map((r) => r.outcome)).toEqual(Array.from({ length: 6 }, () => tooLarge));
    expect(results.map((r) => r.sent)).toEqual(Array.from({ length: 6 }, () => 60 * MiB));
  }, 120_000);

  it("sending 1 GiB, is cut off within the drain's bounds: the gateway does not read it all", async () => {
    const { outcome, sent, ms } = await sendWholeThenRead(g.url, { path: "/v1/messages", headers: headers() }, 1024 * MiB);
    expect(outcome).toEqual(expect.stringMatching(/^(ECONNRESET|EPIPE)$/));
    // What the gateway read past its answer, plus what the two sockets' buffers held when it cut.
    expect(sent).toBeGreaterThanOrEqual(DEFAULT_LINGER.maxBytes);
    expect(sent).toBeLessThan(DEFAULT_LINGER.maxBytes + 32 * MiB);
    expect(ms).toBeLessThan(DEFAULT_LINGER.maxMs + 5_000);
    // And it serves on.
    const res = await fetch(`${g.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
  }, 120_000);
});
