import { createServer, type Server } from "node:http";
import { closeServer, listen } from "@meter/service-kit";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/**
 * A request that never reached the service (nothing listening at the endpoint: a replica stopping) is
 * sent once more, to the next endpoint of TEXT_URL; in Kubernetes, where TEXT_URL is a Service, the new
 * connection goes to another pod. One that may have been delivered is never sent twice.
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
