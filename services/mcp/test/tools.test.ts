import { randomUUID } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { eventually, LOCAL_MODEL, startMcpSystem, structured, type Account, type McpSystem } from "./support/mcp-system";

const READ_TOOLS = ["list_models", "quote_text", "quote_media", "get_job", "list_files", "get_file"];
const TEXT_PAID = ["create_message", "create_response", "ocr", "analyze_text"];
const IMAGE_PAID = ["edit_image", "analyze_image"];

let s: McpSystem;
const clients: Client[] = [];

beforeAll(async () => {
  // A short synchronous window, so a slow text call answers 202 and the tool reports it pending.
  s = await startMcpSystem({ TEXT_SYNC_TIMEOUT_MS: "1500" });
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close();
  await s?.sut.assertBooksBalance();
  await s?.close();
});

async function client(a: Account): Promise<Client> {
  const c = await s.connect(a.key);
  clients.push(c);
  return c;
}

const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const message = (text: string, extra: Record<string, unknown> = {}) => ({
  model: LOCAL_MODEL,
  max_tokens: 200,
  messages: [{ role: "user", content: text }],
  ...extra,
});

/** The organization's ledger once no hold is active any more: settlements reach billing over the bus. */
async function settledLedger(a: Account): Promise<string[]> {
  await eventually(async () => {
    const b = await s.sut.admin<{ reserved_microrub: number }>("GET", `/admin/v1/organizations/${a.organizationId}/balance`);
    return b.reserved_microrub === 0 ? true : undefined;
  }, "the holds to be resolved");
  const ledger = await s.sut.admin<{ data: { kind: string; hold_id: string | null; reference: string | null }[] }>(
    "GET",
    `/admin/v1/organizations/${a.organizationId}/ledger`,
  );
  // The requests' own entries: an allowance text took for the key (granted, then returned) is not a request.
  const allowances = new Set(ledger.data.filter((e) => e.kind === "hold" && e.reference === "allowance").map((e) => e.hold_id));
  return ledger.data
    .filter((e) => !allowances.has(e.hold_id))
    .map((e) => e.kind)
    .sort();
}

describe("tools/list follows the key's scopes", () => {
  it.each([
    [["mcp:read"], ["list_models"]],
    [["mcp:read", "text", "files:read"], READ_TOOLS],
    [["mcp:invoke", "text"], TEXT_PAID],
    [["mcp:invoke", "images"], IMAGE_PAID],
    [
      ["mcp:read", "mcp:invoke", "text", "images", "files:read"],
      [...READ_TOOLS, "create_message", "create_response", "edit_image", "analyze_image", "ocr", "analyze_text"],
    ],
    [["mcp:invoke"], []],
  ] as const)("%j sees %j", async (scopes, expected) => {
    const c = await client(await s.account({ scopes: [...scopes] }));
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(expected);
    for (const t of tools) {
      expect(t.description!.length).toBeGreaterThan(40);
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema?.type).toBe("object");
    }
  });

  it("a tool the key may not see cannot be called either, and the refusal names the missing scope", async () => {
    const c = await client(await s.account({ scopes: ["mcp:read", "text"] }));
    const r = await call(c, "create_message", message("not allowed"));
    expect(r.isError).toBe(true);
    expect(structured(r).error).toMatchObject({ code: "insufficient_scope", http_status: 403, details: { missing_scopes: [["mcp:invoke"]] } });
    expect((r.content[0] as { text: string }).text).toMatch(/^insufficient_scope: create_message needs the "mcp:invoke" scope/);
  });

  it("a read tool whose endpoint needs another right is not listed, and a call names that right", async () => {
    const c = await client(await s.account({ scopes: ["mcp:read"] }));
    const r = await call(c, "quote_text", { model: LOCAL_MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(r.isError).toBe(true);
    expect(structured(r).error).toMatchObject({ code: "insufficient_scope", details: { missing_scopes: [["text"]] } });
    const files = await call(c, "list_files", {});
    expect((files.content[0] as { text: string }).text).toMatch(/needs the "files:read" or "files:write" scope/);
  });
});

describe("read tools", () => {
  let c: Client;
  beforeAll(async () => {
    c = await client(await s.account());
  });

  it("list_models lists the catalog with tariffs, filtered by operation and paged", async () => {
    const r = await call(c, "list_models", { operation: "text", limit: 100 });
    expect(r.isError).toBeFalsy();
    const models = structured(r).models as { id: string; operations: Record<string, unknown> }[];
    expect(models.find((m) => m.id === LOCAL_MODEL)?.operations).toHaveProperty("text");
    expect(models.every((m) => "text" in m.operations)).toBe(true);

    const first = structured(await call(c, "list_models", { limit: 1 }));
    expect(first).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    expect(first.models).toHaveLength(1);
    const second = structured(await call(c, "list_models", { limit: 1, cursor: first.next_cursor }));
    expect((second.models as { id: string }[])[0]!.id).not.toBe((first.models as { id: string }[])[0]!.id);
  });

  it("quote_text estimates without reserving anything", async () => {
    const a = await s.account();
    const r = await call(await client(a), "quote_text", { model: LOCAL_MODEL, messages: [{ role: "user", content: "how much?" }], max_tokens: 100 });
    expect(r.isError).toBeFalsy();
    expect((structured(r).quote as { estimated_cost_microrub: number }).estimated_cost_microrub).toBeGreaterThan(0);
    expect(await settledLedger(a)).toEqual(["credit"]);
  });

  it("arguments are checked against the tool's schema", async () => {
    const r = await call(c, "quote_text", { model: LOCAL_MODEL, messages: [] });
    expect(r.isError).toBe(true);
  });

  it.each([
    ["quote_media", { model: LOCAL_MODEL, operation: "ocr", file_id: "00000000-0000-4000-8000-000000000000" }],
    ["get_job", { job_id: "00000000-0000-4000-8000-000000000000" }],
  ])("%s reaches the media API, switched off here: media_disabled", async (name, args) => {
    const r = await call(c, name, args);
    expect(r.isError).toBe(true);
    expect(structured(r).error).toMatchObject({ code: "media_disabled", http_status: 503 });
  });

  it.each([
    ["list_files", {}],
    ["get_file", { file_id: "00000000-0000-4000-8000-000000000000" }],
  ])("%s reaches the files API (not running in this system: service_unavailable, passed on)", async (name, args) => {
    const r = await call(c, name, args);
    expect(r.isError).toBe(true);
    expect(structured(r).error).toMatchObject({ code: "service_unavailable", http_status: 503 });
  });
});

describe("paid tools", () => {
  it("create_message answers through /v1/messages and returns the key it generated", async () => {
    const c = await client(await s.account());
    const r = await call(c, "create_message", message("hello there"));
    expect(r.isError).toBeFalsy();
    const out = structured(r);
    expect(out).toMatchObject({ status: "completed", text: "Echo: hello there", message: { billing: { status: "settled" } } });
    expect(out.idempotency_key).toMatch(/^mcp-/);
  });

  it("create_message takes the /v1/messages body as that endpoint does: text blocks, a system prompt", async () => {
    const c = await client(await s.account());
    const r = await call(c, "create_message", {
      model: LOCAL_MODEL,
      max_tokens: 50,
      system: "be brief",
      messages: [{ role: "user", content: [{ type: "text", text: "in blocks" }] }],
    });
    expect(structured(r)).toMatchObject({ status: "completed", text: "Echo: in blocks" });
    const refused = await call(c, "create_message", {
      model: LOCAL_MODEL,
      max_tokens: 50,
      messages: [{ role: "user", content: [{ type: "image", text: "x" }] }],
    });
    expect(refused.isError).toBe(true);
  });

  it("create_response answers through /v1/responses", async () => {
    const c = await client(await s.account());
    const r = await call(c, "create_response", { model: LOCAL_MODEL, input: "respond", max_output_tokens: 50 });
    expect(r.isError).toBeFalsy();
    expect(structured(r)).toMatchObject({ status: "completed", text: "Echo: respond", response: { object: "response" } });
  });

  it("the same idempotency_key twice is one request: the same answer, one hold, one charge in the ledger and the key's usage", async () => {
    const a = await s.account();
    const c = await client(a);
    const key = `once-${randomUUID()}`;
    const first = structured(await call(c, "create_message", message("charge me once", { idempotency_key: key })));
    const second = structured(await call(c, "create_message", message("charge me once", { idempotency_key: key })));
    expect(first.status).toBe("completed");
    expect(second).toEqual(first);
    expect(await settledLedger(a)).toEqual(["credit", "hold", "settle"]);
    const cost = (first.message as { billing: { cost_microrub: number } }).billing.cost_microrub;
    const usage = await s.sut.admin<{ spent_microrub: number; reserved_microrub: number }>("GET", `/admin/v1/keys/${a.keyId}/usage`);
    expect(usage).toMatchObject({ spent_microrub: cost, reserved_microrub: 0 });

    // A new key is a new request, charged again.
    await call(c, "create_message", message("charge me once", { idempotency_key: `${key}-2` }));
    expect(await settledLedger(a)).toEqual(["credit", "hold", "hold", "settle", "settle"]);
  });

  it("the same idempotency_key with other arguments is refused, as by the HTTP API", async () => {
    const c = await client(await s.account());
    const key = `mismatch-${randomUUID()}`;
    await call(c, "create_message", message("first", { idempotency_key: key }));
    const r = await call(c, "create_message", message("second", { idempotency_key: key }));
    expect(r.isError).toBe(true);
    expect(structured(r)).toMatchObject({ idempotency_key: key, error: { code: "idempotency_key_mismatch", http_status: 422 } });
  });

  it("a call the key's daily budget cannot cover is refused with the API's code, nothing charged", async () => {
    const a = await s.account({ dailyBudget: 10 });
    const r = await call(await client(a), "create_message", message("too dear", { max_tokens: 5000 }));
    expect(r.isError).toBe(true);
    expect(structured(r).error).toMatchObject({ code: "daily_budget_exceeded", http_status: 429 });
    expect(await settledLedger(a)).toEqual(["credit"]);
  });

  it("a text call slower than the synchronous window is pending; the same call later returns the result, charged once", async () => {
    const a = await s.account();
    const c = await client(a);
    const key = `slow-${randomUUID()}`;
    const args = message("[[sleep:2500]] take your time", { idempotency_key: key });
    const first = await call(c, "create_message", args);
    expect(first.isError).toBeFalsy();
    expect(structured(first)).toMatchObject({ idempotency_key: key, status: "pending", pending: { status: "in_progress" } });
    expect((first.content[0] as { text: string }).text).toContain(key);
    const done = await eventually(async () => {
      const r = structured(await call(c, "create_message", args));
      return r.status === "completed" ? r : undefined;
    }, "the pending call to complete");
    expect(done.text).toBe("Echo: [[sleep:2500]] take your time");
    expect(await settledLedger(a)).toEqual(["credit", "hold", "settle"]);
  });

  it.each([
    ["edit_image", { model: LOCAL_MODEL, prompt: "make it blue", file_id: "00000000-0000-4000-8000-000000000000" }],
    ["analyze_image", { model: LOCAL_MODEL, file_id: "00000000-0000-4000-8000-000000000000" }],
    ["ocr", { model: LOCAL_MODEL, file_ids: ["00000000-0000-4000-8000-000000000000"] }],
    ["analyze_text", { model: LOCAL_MODEL, input: "some text", settings: { task: "sentiment" } }],
  ])("%s creates its job through the media API: off here, so media_disabled with nothing charged", async (name, args) => {
    const a = await s.account();
    const r = await call(await client(a), name, { ...args, idempotency_key: `job-${randomUUID()}` });
    expect(r.isError).toBe(true);
    expect(structured(r)).toMatchObject({ idempotency_key: expect.stringMatching(/^job-/), error: { code: "media_disabled", http_status: 503 } });
    expect(await settledLedger(a)).toEqual(["credit"]);
  });
});

describe("max_cost_microrub on the paid text tools", () => {
  it.each([
    ["create_message", message("capped")],
    ["create_response", { model: LOCAL_MODEL, input: "capped", max_output_tokens: 200 }],
  ])("%s: an estimate above the cap is max_cost_exceeded with nothing reserved; a cap above it runs", async (name, args) => {
    const a = await s.account();
    const c = await client(a);
    const refused = await call(c, name, { ...args, max_cost_microrub: 1 });
    expect(refused.isError).toBe(true);
    expect(structured(refused).error).toMatchObject({ code: "max_cost_exceeded", http_status: 422 });
    expect(await settledLedger(a)).toEqual(["credit"]);
    const ran = await call(c, name, { ...args, max_cost_microrub: 1_000_000_000 });
    expect(structured(ran)).toMatchObject({ status: "completed", text: "Echo: capped" });
  });
});

describe("result size", () => {
  it("a result over the limit is delivered as a link to the whole of it and a preview, downloadable with the same key, charged once", async () => {
    // A second MCP process with a small limit: no tool's result reaches 512 KiB under a 64 KiB request here
    // (the limit itself is unit-tested at 512 KiB in src/services/tool-invoker.test.ts).
    const second = await s.startSecondMcp({ MCP_RESULT_LIMIT_BYTES: "4096" });
    const a = await s.account();
    // Headers a client (or a proxy it controls) sets must not choose where the link points.
    const c = await second.connect(a, { "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" });
    clients.push(c);
    const small = await call(c, "create_message", message("short"));
    expect(small.isError).toBeFalsy();
    expect(structured(small).full_result).toBeUndefined();

    const key = `big-${randomUUID()}`;
    const prompt = "x".repeat(6000);
    const r = await call(c, "create_message", message(prompt, { max_tokens: 8000, idempotency_key: key }));
    expect(r.isError).toBeFalsy();
    const out = structured(r) as { full_result: { content_url: string; result_id: string }; preview: string; text?: string };
    expect(out).toMatchObject({ idempotency_key: key, status: "completed", full_result: { mime_type: "application/json" } });
    expect(out.text).toBeUndefined();
    expect(`Echo: ${prompt}`.startsWith(out.preview)).toBe(true);
    expect(JSON.stringify({ jsonrpc: "2.0", id: 1, result: r }).length).toBeLessThanOrEqual(4096 + 64);
    expect(r.content).toContainEqual(expect.objectContaining({ type: "resource_link", uri: out.full_result.content_url }));

    expect(new URL(out.full_result.content_url).origin).toBe(new URL(s.url).origin);
    const path = new URL(out.full_result.content_url).pathname;
    const download = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${a.key}` } });
    expect(download.status).toBe(200);
    expect(await download.json()).toMatchObject({ idempotency_key: key, status: "completed", text: `Echo: ${prompt}` });
    const stranger = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${(await s.account()).key}` } });
    expect(stranger.status).toBe(404);

    const again = structured(await call(c, "create_message", message(prompt, { max_tokens: 8000, idempotency_key: key })));
    expect(again.full_result).toEqual(out.full_result);
    expect(await settledLedger(a)).toEqual(["credit", "hold", "hold", "settle", "settle"]);
  });
});
