import { createServer, request, type Server } from "node:http";
import { generateInternalKeySet, InternalAuth, listen, closeServer, parseInternalKeys } from "@meter/service-kit";
import { testAuth } from "@meter/testing";
import { ADMIN_TOKEN, startGateway, type GatewayHarness } from "./support/gateway-harness";

let g: GatewayHarness;
let echo: { server: Server; url: string; seen: { headers: Record<string, unknown>; body: string; url: string }[] };

/** Stands in for a downstream service, recording exactly what the gateway forwards. */
async function startEcho() {
  const seen: { headers: Record<string, unknown>; body: string; url: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      seen.push({ headers: req.headers, body, url: req.url ?? "" });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true }));
    });
  });
  const port = await listen(server, 0, "127.0.0.1");
  return { server, url: `http://127.0.0.1:${port}`, seen };
}

beforeAll(async () => {
  echo = await startEcho();
  g = await startGateway({ keyCacheTtlMs: 300, textLimit: 2048, services: { files: echo.url } });
});
afterAll(async () => {
  await g.assertBooksBalance();
  await g.close();
  await closeServer(echo.server);
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(g.url + path, { headers });
const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(g.url + path, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });

async function expectError(res: Response, status: number, code: string) {
  const body = (await res.json()) as { type: string; error: { code: string; message: string; type: string; request_id: string } };
  expect({ status: res.status, code: body.error.code }).toEqual({ status, code });
  expect(body.type).toBe("error");
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  return body;
}

describe("authentication", () => {
  it("a missing key is 401 authentication_required", async () => {
    await expectError(await get("/v1/models"), 401, "authentication_required");
  });

  it("an unknown key is 401 invalid_api_key", async () => {
    await expectError(await get("/v1/models", { authorization: "Bearer mtr_nonsense" }), 401, "invalid_api_key");
  });

  it("a valid key reads the catalog", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    const res = await get("/v1/models", { authorization: `Bearer ${key}` });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe("list");
  });

  it("a revoked key stops working within the cache window", async () => {
    const { key, keyId } = await g.account({ scopes: ["text"] });
    expect((await get("/v1/models", { authorization: `Bearer ${key}` })).status).toBe(200);
    const revoke = await fetch(`${g.url}/admin/v1/keys/${keyId}/revoke`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(revoke.status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    await expectError(await get("/v1/models", { authorization: `Bearer ${key}` }), 401, "invalid_api_key");
  });

  it("x-api-key works where the contract allows it and nowhere else", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    // Accepted on /v1/messages: the request gets past authentication to the (absent) text service.
    await expectError(await post("/v1/messages", "{}", { "x-api-key": key }), 503, "service_unavailable");
    await expectError(await post("/v1/responses", "{}", { "x-api-key": key }), 401, "authentication_required");
  });

  it("the admin API needs the admin token", async () => {
    await expectError(await get("/admin/v1/models"), 401, "authentication_required");
    await expectError(await get("/admin/v1/models", { authorization: "Bearer wrong-token-wrong-token" }), 401, "invalid_api_key");
    expect((await get("/admin/v1/models", { authorization: `Bearer ${ADMIN_TOKEN}` })).status).toBe(200);
  });
});

describe("scopes", () => {
  it("a key without the route's right is 403 insufficient_scope", async () => {
    const { key } = await g.account({ scopes: ["images"] });
    await expectError(await post("/v1/messages", "{}", { authorization: `Bearer ${key}` }), 403, "insufficient_scope");
    await expectError(await post("/v1/files", "{}", { authorization: `Bearer ${key}` }), 403, "insufficient_scope");
  });

  it("a quote needs the right of the quoted operation", async () => {
    const { key } = await g.account({ scopes: ["images"] });
    const body = JSON.stringify({ model: "m", operation: "ocr" });
    await expectError(await post("/v1/quotes", body, { authorization: `Bearer ${key}` }), 403, "insufficient_scope");
  });
});

describe("bodies", () => {
  it("a body over the route's limit is 413 payload_too_large", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    const big = JSON.stringify({ input: "x".repeat(4096) });
    await expectError(await post("/v1/responses", big, { authorization: `Bearer ${key}` }), 413, "payload_too_large");
  });

  it("a chunked body over the limit is refused too", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(`{"input":"${"y".repeat(5000)}"}`));
        c.close();
      },
    });
    const res = await fetch(`${g.url}/v1/responses`, {
      method: "POST",
      body: stream,
      duplex: "half",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    } as RequestInit);
    await expectError(res, 413, "payload_too_large");
  });

  it("malformed JSON is 400 invalid_json", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    await expectError(await post("/v1/responses", '{"model": ', { authorization: `Bearer ${key}` }), 400, "invalid_json");
  });

  it("JSON that is not an object (null, a number, a string) is 400 invalid_request", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    for (const body of ["null", "42", '"text"']) {
      await expectError(await post("/v1/responses", body, { authorization: `Bearer ${key}` }), 400, "invalid_request");
    }
  });

  it("a non-JSON body is 415 unsupported_media_type", async () => {
    const { key } = await g.account({ scopes: ["text"] });
    const res = await fetch(`${g.url}/v1/responses`, {
      method: "POST",
      body: "model=x",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Bearer ${key}` },
    });
    await expectError(res, 415, "unsupported_media_type");
  });
});

describe("routing", () => {
  it("forwards the body byte for byte with a signed identity, and never the key", async () => {
    const { key, keyId } = await g.account({ scopes: ["files:write"] });
    const body = '{ "filename":"a.png",  "mime_type":"image/png" }';
    const res = await post("/v1/files", body, { authorization: `Bearer ${key}`, "x-meter-identity": "forged" });
    expect(res.status).toBe(200);
    const seen = echo.seen.at(-1)!;
    expect(seen.body).toBe(body);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers["x-request-id"]).toBe(res.headers.get("x-request-id"));
    const identity = JSON.parse(Buffer.from(String(seen.headers["x-meter-identity"]), "base64url").toString("utf8"));
    expect(identity).toMatchObject({ kind: "key", key_id: keyId, scopes: ["files:write"] });
  });

  it("a client that sends Expect: 100-continue (curl does, for bodies over 1 MiB) gets its answer", async () => {
    const { key } = await g.account({ scopes: ["files:write"] });
    const body = '{"filename":"b.png","mime_type":"image/png"}';
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${g.url}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body), expect: "100-continue" },
        timeout: 5000,
      });
      req.on("continue", () => req.end(body));
      req.on("timeout", () => req.destroy(new Error("no answer within 5 s")));
      req.on("error", reject);
      req.on("response", (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
    });
    expect(answer).toEqual({ status: 200, text: '{"ok":true}' });
    expect(echo.seen.at(-1)!.body).toBe(body);
  });

  it("a service that is not running is 503 service_unavailable", async () => {
    const { key } = await g.account({ scopes: ["mcp:read"] });
    await expectError(await post("/mcp", "{}", { authorization: `Bearer ${key}` }), 503, "service_unavailable");
  });

  it("a paid route whose service name does not resolve is 503, not pending: nothing was sent", async () => {
    // What a container being restarted looks like under compose or Kubernetes: its name leaves DNS.
    const unresolved = await startGateway({ services: { text: "http://meter-text.invalid:8081" } });
    try {
      const { key } = await unresolved.account({ scopes: ["text"] });
      const res = await fetch(`${unresolved.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key, "idempotency-key": "dns-1" },
        body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
      });
      await expectError(res, 503, "service_unavailable");
    } finally {
      await unresolved.close();
    }
  });

  it("every media endpoint is 503 media_disabled while MEDIA_ENABLED is off (the default)", async () => {
    const { key } = await g.account({ scopes: ["images", "text"] });
    const auth = { authorization: `Bearer ${key}` };
    for (const path of ["/v1/images/edits", "/v1/images/analysis", "/v1/ocr", "/v1/text/analysis", "/v1/quotes"]) {
      await expectError(await post(path, JSON.stringify({ model: "m", operation: "image_edit" }), auth), 503, "media_disabled");
    }
    await expectError(await get("/v1/jobs", auth), 503, "media_disabled");
    await expectError(await get(`/v1/jobs/${crypto.randomUUID()}`, auth), 503, "media_disabled");
  });

  it("GET and DELETE on /mcp are 405, whatever the credentials", async () => {
    await expectError(await get("/mcp"), 405, "method_not_allowed");
    await expectError(await fetch(`${g.url}/mcp`, { method: "DELETE" }), 405, "method_not_allowed");
  });

  it("a known path with another method is 405, an unknown path 404", async () => {
    await expectError(await fetch(`${g.url}/v1/messages`, { method: "GET" }), 405, "method_not_allowed");
    await expectError(await get("/v1/nothing-here"), 404, "not_found");
  });

  it("every response carries x-request-id, and the same id as request-id for Anthropic clients", async () => {
    const res = await get("/healthz");
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.headers.get("request-id")).toBe(res.headers.get("x-request-id"));
  });
});

describe("services trust only the gateway", () => {
  it("a call straight to a service port without a valid signature is 401", async () => {
    const direct = await fetch(`${g.billingUrl}/admin/v1/models`);
    await expectError(direct, 401, "authentication_required");

    // Signed by a key pair of the right shape that billing does not know.
    const foreign = generateInternalKeySet();
    const forger = new InternalAuth(parseInternalKeys("gateway", foreign.signingKeys.gateway, foreign.publicKeys));
    const forgedHeaders = forger.sign({ kind: "admin" }, { audience: "billing-ledger", method: "GET", path: "/admin/v1/models" });
    await expectError(await fetch(`${g.billingUrl}/admin/v1/models`, { headers: forgedHeaders }), 401, "authentication_required");

    // A genuine signature for another path cannot be used here.
    const elsewhere = testAuth("gateway").sign({ kind: "admin" }, { audience: "billing-ledger", method: "GET", path: "/admin/v1/holds" });
    await expectError(await fetch(`${g.billingUrl}/admin/v1/models`, { headers: elsewhere }), 401, "authentication_required");
  });
});

describe("rate limits", () => {
  it("are off by default and, when on, answer 429 rate_limited with Retry-After", async () => {
    const limited = await startGateway({ rateLimitPerMinute: 2 });
    try {
      const { key } = await limited.account({ scopes: ["text"] });
      const call = () => fetch(`${limited.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect((await call()).status).toBe(200);
      expect((await call()).status).toBe(200);
      const third = await call();
      expect(third.headers.get("retry-after")).toMatch(/^\d+$/);
      const body = (await third.json()) as { error: { code: string } };
      expect({ status: third.status, code: body.error.code }).toEqual({ status: 429, code: "rate_limited" });
    } finally {
      await limited.close();
    }
  });
});
