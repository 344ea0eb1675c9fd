import { randomUUID } from "node:crypto";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Pool } from "pg";
import { Agent, request } from "undici";
import type { KeyIdentity, Scope } from "@meter/contracts";
import { startSystem, withAssignedPorts, type RunningSystem, type ServiceName } from "@meter/local-infra";
import { createTestDatabase, LOCAL_MODEL, startSystemUnderTest, testAuth, testKeySet, type SystemUnderTest, type TestDatabase } from "@meter/testing";

export { LOCAL_MODEL };
export const ALL_SCOPES: Scope[] = ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"];
export const ACCEPT = "application/json, text/event-stream";

export interface Account {
  key: string;
  keyId: string;
  userId: string;
  organizationId: string;
  identity: KeyIdentity;
}

export interface McpSystem {
  sut: SystemUnderTest;
  /** The gateway's base URL; MCP is at `${url}/mcp`. */
  url: string;
  /** The MCP database every MCP process of this system shares (the leases). */
  databaseUrl: string;
  account(opts?: { scopes?: Scope[]; credit?: number; dailyBudget?: number }): Promise<Account>;
  /** An SDK client through the gateway, with the key in Authorization (as Claude Code or Cursor send it). */
  connect(key: string): Promise<Client>;
  /** Unexpired leases of an organization: its running tool calls as every MCP process sees them. */
  activeLeases(organizationId: string): Promise<number>;
  /** A second MCP process of its own, on the same database, reached directly with gateway-signed calls. */
  startSecondMcp(env?: Record<string, string>): Promise<SecondMcp>;
  close(): Promise<void>;
}

export interface SecondMcp {
  url: string;
  system: RunningSystem;
  /** An SDK client speaking to this process directly, each request signed as the gateway would sign it. */
  connect(account: Account, headers?: Record<string, string>): Promise<Client>;
  close(): Promise<void>;
}

const SERVICE_DIR = path.resolve(__dirname, "../..");

/**
 * billing-ledger, text, gateway and MCP as real processes (startSystemUnderTest), MCP on a database this
 * test owns so it can read the lease table, and the local echo model for paid text calls.
 */
export async function startMcpSystem(env: Record<string, string> = {}): Promise<McpSystem> {
  const database: TestDatabase = await createTestDatabase(SERVICE_DIR);
  const sut = await startSystemUnderTest({ only: ["billing-ledger", "text", "gateway", "mcp"], env: { MCP_DATABASE_URL: database.url, ...env } }).catch(
    async (e: unknown) => {
      await database.drop();
      throw e;
    },
  );
  const pool = new Pool({ connectionString: database.url, max: 2 });
  const seconds: SecondMcp[] = [];

  const account: McpSystem["account"] = async ({ scopes = ALL_SCOPES, credit = 1_000_000_000, dailyBudget = 1_000_000_000 } = {}) => {
    const user = await sut.admin<{ id: string }>("POST", "/admin/v1/users", { email: `mcp-${randomUUID()}@example.test` });
    const org = await sut.admin<{ id: string }>("POST", "/admin/v1/organizations", { name: "mcp-test" });
    await sut.admin("POST", `/admin/v1/organizations/${org.id}/members`, { user_id: user.id });
    await sut.admin("POST", `/admin/v1/organizations/${org.id}/credits`, { amount_microrub: credit, reference: "mcp-test" });
    const key = await sut.admin<{ id: string; key: string }>("POST", "/admin/v1/keys", {
      user_id: user.id,
      organization_id: org.id,
      scopes,
      daily_budget_microrub: dailyBudget,
    });
    return {
      key: key.key,
      keyId: key.id,
      userId: user.id,
      organizationId: org.id,
      identity: { kind: "key", key_id: key.id, user_id: user.id, organization_id: org.id, scopes },
    };
  };

  return {
    sut,
    url: sut.url,
    databaseUrl: database.url,
    account,
    connect: (key) => connectClient(`${sut.url}/mcp`, { authorization: `Bearer ${key}` }),
    async activeLeases(organizationId) {
      const r = await pool.query<{ n: string }>("SELECT count(*) AS n FROM tool_call_leases WHERE organization_id = $1 AND expires_at > now()", [
        organizationId,
      ]);
      return Number(r.rows[0]!.n);
    },
    async startSecondMcp(extraEnv = {}) {
      const system = await withAssignedPorts(1, ([mcp]) =>
        startSystem({
          internalKeys: testKeySet(),
          ports: { ...portsOf(sut.system.urls), mcp: mcp! },
          // Only MCP starts here: no gateway listens on it.
          gatewayInternalPort: 0,
          only: ["mcp"],
          env: { MCP_DATABASE_URL: database.url, LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "error", ...env, ...extraEnv },
          onOutput: process.env.E2E_LOG_LEVEL ? (name, line) => console.log(`[${name}#2] ${line}`) : undefined,
        }),
      );
      const url = system.urls.mcp;
      const second: SecondMcp = {
        url,
        system,
        connect: (a, headers = {}) => connectClient(`${url}/mcp`, { ...headers, authorization: `Bearer ${a.key}` }, gatewaySignedFetch(a.identity)),
        close: () => system.stop(),
      };
      seconds.push(second);
      return second;
    },
    async close() {
      for (const s of seconds) await s.close();
      await pool.end();
      await sut.close();
      await database.drop();
    },
  };
}

async function connectClient(url: string, headers: Record<string, string>, fetchFn?: typeof fetch): Promise<Client> {
  const client = new Client({ name: "meter-mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, ...(fetchFn ? { fetch: fetchFn } : {}) });
  await client.connect(transport);
  return client;
}

/**
 * What the gateway does to a request it forwards to MCP: the key holder's identity, signed over the
 * method, path and body. The Authorization header (the caller's own key) goes along unchanged.
 */
export function gatewaySignedFetch(identity: KeyIdentity): typeof fetch {
  const auth = testAuth("gateway");
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? "GET";
    const body = typeof init?.body === "string" ? init.body : undefined;
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(auth.sign(identity, { audience: "mcp", method, path: url.pathname + url.search, body }))) headers.set(k, v);
    return fetch(url, { ...init, headers });
  };
}

/** A raw JSON-RPC POST through the gateway, for what the SDK client never sends (batches, 2026-07-28, bad headers). */
export async function postMcp(
  url: string,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: unknown; text: string }> {
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, accept: ACCEPT, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/**
 * A POST on a connection of its own, closed afterwards: for a body the gateway refuses before reading
 * it (413 on the declared length), after which it lingers on that connection to drain the rest, so the
 * connection is not one to reuse for the next request.
 */
export async function postMcpAlone(url: string, key: string, body: string): Promise<{ status: number; json: unknown }> {
  const agent = new Agent();
  try {
    const res = await request(`${url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, accept: ACCEPT, "content-type": "application/json" },
      body,
      dispatcher: agent,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: JSON.parse(text) as unknown };
  } finally {
    await agent.destroy();
  }
}

/** The structured result of a tool call, typed loosely for assertions. */
export function structured(result: unknown): Record<string, unknown> {
  return ((result as CallToolResult).structuredContent ?? {}) as Record<string, unknown>;
}

export function errorCode(result: unknown): string | undefined {
  return (structured(result).error as { code?: string } | undefined)?.code;
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function portsOf(urls: Record<ServiceName, string>): Record<ServiceName, number> {
  return Object.fromEntries(Object.entries(urls).map(([name, u]) => [name, Number(new URL(u).port)])) as Record<ServiceName, number>;
}
