import { gatewaySignedFetch, LOCAL_MODEL, postMcp, postMcpAlone, startMcpSystem, ACCEPT, type Account, type McpSystem } from "./support/mcp-system";

let s: McpSystem;
let a: Account;

const ALLOWED_ORIGIN = "https://app.example.test";

beforeAll(async () => {
  s = await startMcpSystem({ MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN });
  a = await s.account();
}, 120_000);
afterAll(async () => {
  await s?.close();
});

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
const modern = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } });
const MODERN_HEADERS = { "mcp-protocol-version": "2026-07-28" };
/** The headers a 2026-07-28 client mirrors from its body. */
function mirrored(body: { method: string; params?: object }): Record<string, string> {
  const name = (body.params as { name?: unknown } | undefined)?.name;
  return { ...MODERN_HEADERS, "mcp-method": body.method, ...(body.method === "tools/call" && typeof name === "string" ? { "mcp-name": name } : {}) };
}
const legacy = (id: number, method: string, params?: unknown) => ({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });

describe("HTTP", () => {
  it.each(["GET", "DELETE"])("%s /mcp is 405", async (method) => {
    const res = await fetch(`${s.url}/mcp`, { method, headers: { authorization: `Bearer ${a.key}`, accept: ACCEPT } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });

  it("an Accept without both application/json and text/event-stream is 406", async () => {
    for (const accept of ["application/json", "text/event-stream"]) {
      const res = await postMcp(s.url, a.key, legacy(1, "tools/list"), { accept });
      expect(res.status).toBe(406);
      expect(res.json).toMatchObject({ error: { code: "not_acceptable" } });
    }
  });

  it("a body that is not JSON is 415, malformed JSON 400", async () => {
    expect((await postMcp(s.url, a.key, "hello", { "content-type": "text/plain" })).status).toBe(415);
    expect((await postMcp(s.url, a.key, "{not json")).status).toBe(400);
  });

  it("a body over 64 KiB is 413; one just under is read", async () => {
    const pad = (n: number) => legacy(1, "tools/call", { name: "list_models", arguments: {}, _meta: { pad: "x".repeat(n) } });
    const overhead = JSON.stringify(pad(0)).length;
    const under = await postMcp(s.url, a.key, pad(64 * 1024 - overhead));
    expect(under.status).toBe(200);
    const over = await postMcpAlone(s.url, a.key, JSON.stringify(pad(64 * 1024 - overhead + 1)));
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("an MCP-Protocol-Version neither era serves is 400, listing the supported versions", async () => {
    const res = await postMcp(s.url, a.key, legacy(7, "tools/list"), { "mcp-protocol-version": "1999-01-01" });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      id: 7,
      error: { code: -32022, data: { requested: "1999-01-01", supported: expect.arrayContaining(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]) } },
    });
    expect((res.json as { error: { message: string } }).error.message).toContain("2025-11-25");
  });

  it("a browser Origin not allowed is 403; an allowed one, or none (non-browser clients), is served", async () => {
    const foreign = await postMcp(s.url, a.key, legacy(1, "tools/list"), { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.json).toMatchObject({ error: { code: "origin_not_allowed" } });
    expect((await postMcp(s.url, a.key, legacy(2, "tools/list"), { origin: ALLOWED_ORIGIN })).status).toBe(200);
    expect((await postMcp(s.url, a.key, legacy(3, "tools/list"))).status).toBe(200);
  });

  it("401 names the Bearer scheme, so clients show the error instead of starting OAuth; the body is the API's error", async () => {
    const wrong = await postMcp(s.url, "sk-not-a-key", legacy(1, "tools/list"));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Bearer realm="meter", error="invalid_token"/);
    expect(wrong.json).toMatchObject({ error: { code: "invalid_api_key" } });
    const none = await fetch(`${s.url}/mcp`, { method: "POST", headers: { accept: ACCEPT, "content-type": "application/json" }, body: "{}" });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="meter"');
    expect(await none.json()).toMatchObject({ error: { code: "authentication_required" } });
  });

  it("notifications/initialized is accepted with 202", async () => {
    const res = await postMcp(s.url, a.key, { jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-protocol-version": "2025-11-25" });
    expect(res.status).toBe(202);
  });

  describe("the MCP service's own door (behind the gateway)", () => {
    const mcpUrl = () => s.sut.system.urls.mcp;

    it("refuses a request the gateway did not sign", async () => {
      const res = await fetch(`${mcpUrl()}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${a.key}`, accept: ACCEPT, "content-type": "application/json" },
        body: JSON.stringify(legacy(1, "tools/list")),
      });
      expect(res.status).toBe(401);
    });

    it("applies its own 64 KiB body limit (413) and 405, whatever the gateway's settings", async () => {
      const signed = gatewaySignedFetch(a.identity);
      const big = JSON.stringify(legacy(1, "tools/call", { name: "list_models", arguments: {}, _meta: { pad: "x".repeat(70 * 1024) } }));
      const res = await signed(`${mcpUrl()}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${a.key}`, accept: ACCEPT, "content-type": "application/json" },
        body: big,
      });
      expect(res.status).toBe(413);
      const get = await signed(`${mcpUrl()}/mcp`, { method: "GET", headers: { authorization: `Bearer ${a.key}`, accept: ACCEPT } });
      expect(get.status).toBe(405);
    });
  });
});

describe("JSON-RPC batches (handshake era)", () => {
  it("answers every entry of a batch from a 2025-03-26 client", async () => {
    const res = await postMcp(s.url, a.key, [legacy(1, "tools/list"), legacy(2, "tools/call", { name: "list_models", arguments: {} })], {
      "mcp-protocol-version": "2025-03-26",
    });
    expect(res.status).toBe(200);
    const answers = res.json as { id: number; result: { tools?: unknown[]; structuredContent?: { models: unknown[] } } }[];
    expect(answers.map((x) => x.id).sort()).toEqual([1, 2]);
    expect(answers.find((x) => x.id === 1)!.result.tools).toHaveLength(12);
    expect(answers.find((x) => x.id === 2)!.result.structuredContent!.models.length).toBeGreaterThan(0);
  });

  it.each(["2025-06-18", "2025-11-25"])("a batch in %s (batches were removed there) is -32600", async (version) => {
    const res = await postMcp(s.url, a.key, [legacy(1, "tools/list"), legacy(2, "tools/list")], { "mcp-protocol-version": version });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: { code: -32600 } });
  });

  it("a batch whose requests repeat an id is -32600 and runs nothing (a paid answer would be lost)", async () => {
    const b = await s.account();
    const paid = legacy(1, "tools/call", {
      name: "create_message",
      arguments: { model: LOCAL_MODEL, max_tokens: 16, messages: [{ role: "user", content: "dup" }] },
    });
    const res = await postMcp(s.url, b.key, [paid, legacy(1, "tools/list")], { "mcp-protocol-version": "2025-03-26" });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: { code: -32600 } });
    const balance = await s.sut.settledBalance(b.organizationId);
    expect(balance.balance_microrub).toBe(1_000_000_000);
  });

  it("a batch may not carry a 2026-07-28 message (that revision sends one message per POST)", async () => {
    const res = await postMcp(s.url, a.key, [legacy(1, "tools/list"), modern(2, "server/discover")]);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: { code: -32600 } });
  });
});

describe("the handshake era's protocol details", () => {
  it.each([
    ["an empty batch", []],
    ['jsonrpc "1.0"', { jsonrpc: "1.0", id: 4, method: "tools/list" }],
  ])("%s is -32600 Invalid Request", async (_what, body) => {
    const res = await postMcp(s.url, a.key, body, { "mcp-protocol-version": "2025-11-25" });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32600 } });
  });

  it("an unknown tool is JSON-RPC -32602, not a tool result", async () => {
    const res = await postMcp(s.url, a.key, legacy(5, "tools/call", { name: "no_such_tool", arguments: {} }), { "mcp-protocol-version": "2025-11-25" });
    expect(res.json).toMatchObject({ id: 5, error: { code: -32602, message: expect.stringContaining("Unknown tool: no_such_tool") } });
  });

  it("a request the SDK cannot read is a generic internal error with the request id, never the parser's dump", async () => {
    const res = await postMcp(s.url, a.key, legacy(6, "tools/call", { name: 5, arguments: "x" }), { "mcp-protocol-version": "2025-11-25" });
    const error = (res.json as { error: { code: number; message: string; data: { request_id: string } } }).error;
    expect(error.code).toBe(-32603);
    expect(error.message).toBe(`Internal error (request id ${error.data.request_id})`);
    expect(res.text).not.toMatch(/invalid_type|expected|"path"/);
  });

  it("initialize offers tools without listChanged, and answers a draft-only version with the newest it serves", async () => {
    const res = await postMcp(
      s.url,
      a.key,
      legacy(7, "initialize", { protocolVersion: "2024-10-07", capabilities: {}, clientInfo: { name: "t", version: "1" } }),
    );
    const result = (res.json as { result: { protocolVersion: string; capabilities: { tools: Record<string, unknown> } } }).result;
    expect(result.protocolVersion).toBe("2025-11-25");
    expect(result.capabilities.tools).toEqual({});
    const header = await postMcp(s.url, a.key, legacy(8, "tools/list"), { "mcp-protocol-version": "2024-10-07" });
    expect(header.json).toMatchObject({ error: { code: -32022 } });
    expect((header.json as { error: { data: { supported: string[] } } }).error.data.supported).not.toContain("2024-10-07");
  });
});

describe("MCP 2026-07-28 (stateless, no initialize)", () => {
  it("server/discover names the versions, capabilities, server and instructions", async () => {
    const res = await postMcp(s.url, a.key, modern(1, "server/discover"), mirrored(modern(1, "server/discover")));
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      result: {
        resultType: "complete",
        supportedVersions: expect.arrayContaining(["2026-07-28", "2025-11-25"]),
        capabilities: { tools: {} },
        instructions: expect.stringContaining("idempotency_key"),
        _meta: { "io.modelcontextprotocol/serverInfo": { name: "meter", version: expect.any(String) } },
      },
    });
  });

  it("tools/list shows the key's tools, with resultType and cache hints", async () => {
    const reader = await s.account({ scopes: ["mcp:read", "text"] });
    const res = await postMcp(s.url, reader.key, modern(2, "tools/list"), mirrored(modern(2, "tools/list")));
    expect(res.status).toBe(200);
    const result = (res.json as { result: { resultType: string; tools: { name: string; inputSchema: { type: string } }[]; cacheScope: string; ttlMs: number } })
      .result;
    expect(result.resultType).toBe("complete");
    expect(result.tools.map((t) => t.name)).toEqual(["list_models", "quote_text", "quote_media", "get_job"]);
    expect(result.tools.every((t) => t.inputSchema.type === "object")).toBe(true);
    expect(result).toMatchObject({ cacheScope: "private", ttlMs: expect.any(Number) });
  });

  it("tools/call runs a paid tool with the same result as the handshake era, plus resultType", async () => {
    const res = await postMcp(
      s.url,
      a.key,
      modern(3, "tools/call", { name: "create_message", arguments: { model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: "modern" }] } }),
      { ...MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "create_message" },
    );
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: 3, result: { resultType: "complete", structuredContent: { status: "completed", text: "Echo: modern" } } });
    expect((res.json as { result: { isError?: boolean } }).result.isError).toBeFalsy();
  });

  it("tool failures are results with isError, as in the handshake era", async () => {
    const body = modern(4, "tools/call", { name: "quote_media", arguments: { model: LOCAL_MODEL, operation: "ocr", input: "x" } });
    const res = await postMcp(s.url, a.key, body, mirrored(body));
    expect(res.json).toMatchObject({ result: { resultType: "complete", isError: true, structuredContent: { error: { code: "media_disabled" } } } });
  });

  it.each([
    ["no _meta", { jsonrpc: "2.0", id: 5, method: "tools/list", params: {} }],
    ["no params", { jsonrpc: "2.0", id: 5, method: "server/discover" }],
    ["no clientCapabilities", { jsonrpc: "2.0", id: 5, method: "tools/list", params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } }],
    ["no protocolVersion", { jsonrpc: "2.0", id: 5, method: "server/discover", params: { _meta: { "io.modelcontextprotocol/clientCapabilities": {} } } }],
  ])("%s: -32602, 400", async (_what, body) => {
    const res = await postMcp(s.url, a.key, body, mirrored(body));
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ jsonrpc: "2.0", id: 5, error: { code: -32602 } });
  });

  it("an unsupported revision in _meta is -32022, listing the supported ones", async () => {
    const body = { jsonrpc: "2.0", id: 6, method: "tools/list", params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2030-01-01" } } };
    const res = await postMcp(s.url, a.key, body);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ id: 6, error: { code: -32022, data: { requested: "2030-01-01", supported: expect.arrayContaining(["2026-07-28"]) } } });
  });

  it("headers that disagree with the body are -32020", async () => {
    const mismatchedVersion = await postMcp(s.url, a.key, modern(8, "tools/list"), { "mcp-protocol-version": "2025-11-25" });
    expect(mismatchedVersion.status).toBe(400);
    expect(mismatchedVersion.json).toMatchObject({ id: 8, error: { code: -32020 } });
    const legacyMeta = {
      jsonrpc: "2.0",
      id: 11,
      method: "tools/list",
      params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2025-06-18" } },
    };
    const mismatchedMeta = await postMcp(s.url, a.key, legacyMeta, mirrored(legacyMeta));
    expect(mismatchedMeta.status).toBe(400);
    expect(mismatchedMeta.json).toMatchObject({ id: 11, error: { code: -32020, message: expect.stringContaining("MCP-Protocol-Version") } });
    const mismatchedName = await postMcp(s.url, a.key, modern(9, "tools/call", { name: "list_models", arguments: {} }), {
      ...MODERN_HEADERS,
      "mcp-name": "create_message",
    });
    expect(mismatchedName.json).toMatchObject({ id: 9, error: { code: -32020 } });
    const encodedName = await postMcp(s.url, a.key, modern(10, "tools/call", { name: "list_models", arguments: {} }), {
      ...MODERN_HEADERS,
      "mcp-method": "tools/call",
      "mcp-name": `=?base64?${Buffer.from("list_models").toString("base64")}?=`,
    });
    expect(encodedName.json).toMatchObject({ id: 10, result: { resultType: "complete" } });
  });

  it("a request without MCP-Protocol-Version, Mcp-Method or (for tools/call) Mcp-Name is -32020", async () => {
    const body = modern(14, "tools/call", { name: "list_models", arguments: {} });
    const full = mirrored(body);
    for (const left of ["mcp-protocol-version", "mcp-method", "mcp-name"] as const) {
      const headers: Record<string, string> = { ...full };
      delete headers[left];
      const res = await postMcp(s.url, a.key, body, headers);
      expect([left, res.status, res.json]).toMatchObject([left, 400, { id: 14, error: { code: -32020 } }]);
    }
  });

  it("a notification with the version header and no _meta is accepted with 202", async () => {
    const res = await postMcp(s.url, a.key, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }, MODERN_HEADERS);
    expect(res.status).toBe(202);
  });

  it("an unknown method is -32601 with 404; an unknown tool -32602; a tool the key may not use names the scope", async () => {
    const ping = await postMcp(s.url, a.key, modern(11, "ping"), mirrored(modern(11, "ping")));
    expect(ping.status).toBe(404);
    expect(ping.json).toMatchObject({ id: 11, error: { code: -32601 } });
    const unknown = modern(12, "tools/call", { name: "no_such_tool", arguments: {} });
    expect((await postMcp(s.url, a.key, unknown, mirrored(unknown))).json).toMatchObject({
      id: 12,
      error: { code: -32602, message: expect.stringContaining("Unknown tool: no_such_tool") },
    });
    const reader = await s.account({ scopes: ["mcp:read"] });
    const forbidden = modern(15, "tools/call", { name: "create_message", arguments: {} });
    expect((await postMcp(s.url, reader.key, forbidden, mirrored(forbidden))).json).toMatchObject({
      id: 15,
      result: { isError: true, structuredContent: { error: { code: "insufficient_scope", details: { missing_scopes: [["mcp:invoke"], ["text"]] } } } },
    });
  });

  it("initialize still selects the handshake era on the same endpoint", async () => {
    const res = await postMcp(
      s.url,
      a.key,
      legacy(13, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }),
    );
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: 13, result: { protocolVersion: "2025-06-18", serverInfo: { name: "meter" } } });
  });
});
