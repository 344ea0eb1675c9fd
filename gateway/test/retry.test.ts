import { createServer, type Server } from "node:http";
import { closeServer, listen } from "@meter/service-kit";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/**
 * A request that never reached the service (nothing listening at the endpoint: a replica stopping) is
 * sent once more, to the next endpoint of TEXT_URL; in Kubernetes, where TEXT_URL is a Service, the new
 * connection goes to another pod. One that may have been delivered is sent twice only when it is paid
 * (so under an Idempotency-Key) and its kept-alive connection was reset before any answer.
 */
let live: { server: Server; url: string; bodies: string[] };
let dead: string;
let g: GatewayHarness;
let key: string;

beforeAll(async () => {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ served: true }));
    });
  });
  live = { server, url: `http://127.0.0.1:${await listen(server, 0, "127.0.0.1")}`, bodies };
  // A port below 1024 that nothing here listens on: a port freed by the test could be taken meanwhile by
  // another suite's server (jest runs two at once), which would then answer in place of "nobody".
  dead = "http://127.0.0.1:1";
  g = await startGateway({ services: { text: `${dead},${live.url}` } });
  key = (await g.account({ scopes: ["text"] })).key;
}, 60_000);
afterAll(async () => {
  await g?.close();
  await closeServer(live.server);
});

const quote = (n: number) =>
  fetch(`${g.url}/v1/chat/quote`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: n, messages: [{ role: "user", content: "hi" }] }),
  });

it("sends a request that found no one listening to the next endpoint, with its body, once", async () => {
  live.bodies.length = 0;
  // The endpoints are taken in turn: half of these go first to the one where nothing listens.
  const answers = await Promise.all([1, 2, 3, 4, 5, 6].map(async (n) => (await quote(n)).status));
  expect(answers).toEqual([200, 200, 200, 200, 200, 200]);
  expect(live.bodies.map((b) => (JSON.parse(b) as { max_tokens: number }).max_tokens).sort()).toEqual([1, 2, 3, 4, 5, 6]);
});

it("answers 503, nothing reserved, when no endpoint can be reached", async () => {
  const g2 = await startGateway({ services: { text: `${dead},${dead}` } });
  try {
    const account = await g2.account({ scopes: ["text"] });
    const res = await fetch(`${g2.url}/v1/chat/quote`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
  } finally {
    await g2.close();
  }
}, 60_000);

/**
 * A service stand-in that answers the first request of each connection and resets the connection under
 * any later paid request, unread: what a replica closing its idle connections does to a request the
 * gateway is just writing. It records each paid request's Idempotency-Key and body.
 */
async function startResetter(): Promise<{ server: Server; url: string; paid: { key: string; body: string; connection: number }[] }> {
  const paid: { key: string; body: string; connection: number }[] = [];
  const served = new WeakMap<object, { id: number; requests: number }>();
  let connections = 0;
  const server = createServer((req, res) => {
    const connection = served.get(req.socket) ?? { id: ++connections, requests: 0 };
    served.set(req.socket, connection);
    connection.requests++;
    if (req.url === "/v1/messages" && connection.requests > 1) {
      req.socket.destroy();
      return;
    }
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (req.url === "/v1/messages") paid.push({ key: String(req.headers["idempotency-key"]), body, connection: connection.id });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ served: req.url }));
    });
  });
  return { server, url: `http://127.0.0.1:${await listen(server, 0, "127.0.0.1")}`, paid };
}

const message = (url: string, apiKey: string, idempotencyKey: string, maxTokens: number) =>
  fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify({ model: "m", max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] }),
  });

describe("a paid request on a kept-alive connection that is reset before any answer", () => {
  let resetter: Awaited<ReturnType<typeof startResetter>>;
  beforeAll(async () => {
    resetter = await startResetter();
  });
  afterAll(() => closeServer(resetter.server));

  it("is sent once more, on a new connection, under the same Idempotency-Key and body: the client gets the answer", async () => {
    const g2 = await startGateway({ services: { text: resetter.url } });
    try {
      const account = await g2.account({ scopes: ["text"] });
      expect((await message(g2.url, account.key, "first", 1)).status).toBe(200);
      const res = await message(g2.url, account.key, "second", 2);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ served: "/v1/messages" });
      const second = resetter.paid.filter((p) => p.key === "second");
      expect(second).toHaveLength(1);
      expect(JSON.parse(second[0]!.body)).toMatchObject({ max_tokens: 2 });
      expect(second[0]!.connection).not.toBe(resetter.paid.find((p) => p.key === "first")!.connection);
    } finally {
      await g2.close();
    }
  }, 60_000);

  it("whose second try finds no one listening is 202 pending, never 503 'nothing reserved': the first may have arrived", async () => {
    const g2 = await startGateway({ services: { text: `${resetter.url},${dead}` } });
    try {
      const account = await g2.account({ scopes: ["text"] });
      const free = (n: number) =>
        fetch(`${g2.url}/v1/chat/quote`, {
          method: "POST",
          headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "m", max_tokens: n, messages: [{ role: "user", content: "hi" }] }),
        });
      // Endpoints in turn: the first opens a connection to the resetter; the second goes to the dead
      // endpoint and is resent over that connection, which stays open; the paid one then goes out on it.
      expect((await free(1)).status).toBe(200);
      expect((await free(2)).status).toBe(200);
      const res = await message(g2.url, account.key, "third", 3);
      expect(res.status).toBe(202);
      expect(await res.json()).toMatchObject({ type: "pending", status: "reconciling" });
    } finally {
      await g2.close();
    }
  }, 60_000);
});
