import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, type VersionNegotiationOptions } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { LOCAL_MODEL, startMcpSystem, type Account, type McpSystem } from "./support/mcp-system";

/**
 * The official TypeScript clients as an agent runs them: SDK 1.x (handshake era), and SDK v2 both
 * pinned to 2026-07-28 and in its default legacy mode. Each lists the key's tools, calls a paid tool
 * and hears an unknown tool refused as a JSON-RPC error.
 */
let s: McpSystem;
let a: Account;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  s = await startMcpSystem();
  a = await s.account({ scopes: ["mcp:read", "mcp:invoke", "text"] });
}, 120_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await s?.close();
});

async function v2(mode: VersionNegotiationOptions["mode"]): Promise<ClientV2> {
  const client = new ClientV2({ name: "interop-v2", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new TransportV2(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${a.key}` } } }));
  closers.push(() => client.close());
  return client;
}

async function v1(): Promise<Client> {
  const client = await s.connect(a.key);
  closers.push(() => client.close());
  return client;
}

type AnyClient = Pick<Client, "listTools" | "callTool">;

const EXPECTED_TOOLS = ["list_models", "quote_text", "quote_media", "get_job", "create_message", "create_response", "ocr", "analyze_text"];

describe.each([
  ["SDK 1.x (handshake era)", () => v1()],
  ["SDK v2 pinned to 2026-07-28", () => v2({ pin: "2026-07-28" })],
  ["SDK v2 in legacy mode", () => v2("legacy")],
])("%s", (_name, connect) => {
  let c: AnyClient;
  beforeAll(async () => {
    c = (await connect()) as unknown as AnyClient;
  });

  it("lists exactly the tools the key may call, each parameter described", async () => {
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(EXPECTED_TOOLS);
    for (const t of tools) {
      for (const [param, schema] of Object.entries(t.inputSchema.properties ?? {})) {
        expect([t.name, param, typeof (schema as { description?: unknown }).description]).toEqual([t.name, param, "string"]);
      }
    }
  });

  it("calls a paid tool and gets its answer and idempotency key", async () => {
    const r = await c.callTool({ name: "create_message", arguments: { model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: "interop" }] } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ status: "completed", text: "Echo: interop", idempotency_key: expect.stringMatching(/^mcp-/) });
  });

  it("hears an unknown tool refused as JSON-RPC -32602, and a scope it lacks named", async () => {
    await expect(c.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/Unknown tool: no_such_tool/);
    const r = await c.callTool({ name: "list_files", arguments: {} });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ error: { code: "insufficient_scope", details: { missing_scopes: [["files:read", "files:write"]] } } });
  });
});
