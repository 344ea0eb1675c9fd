import { createServer, type RequestListener } from "node:http";
import path from "node:path";
import { connectBus, type Bus } from "@meter/messaging";
import { closeServer, createLogger, listen } from "@meter/service-kit";
import { createTestDatabase, createTestVhost, startFakeUpstream, type FakeUpstream, type TestDatabase, type TestVhost } from "@meter/testing";
import { ADMIN_TOKEN, startGateway, type GatewayHarness } from "@meter/gateway/test/support/gateway-harness";
import { TEST_SECRET } from "@meter/billing-ledger/test/support/billing-harness";
import { createTextService, type TextService } from "../../src/text-service";

import { FAKE_MODEL, LOCAL_MODEL, PRICES } from "@meter/testing";

export { FAKE_MODEL, LOCAL_MODEL, PRICES };
export const FAKE_CHAT_MODEL = "fake-chat";

export interface TextStack {
  url: string;
  gateway: GatewayHarness;
  text: TextService;
  fake: FakeUpstream;
  bus: Bus;
  /** Admin API call through the gateway. */
  admin(method: string, p: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** A public API call with a key, returning status, headers and the raw and parsed body. */
  call(
    key: string,
    p: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; text: string; json: Record<string, unknown> }>;
  balance(organizationId: string): Promise<{ balance_microrub: number; reserved_microrub: number; available_microrub: number }>;
  /** Holds of the text service still active in billing. */
  activeHolds(): Promise<number>;
  close(): Promise<void>;
}

/**
 * A real billing-ledger, gateway and text service in this process, on real PostgreSQL and RabbitMQ,
 * with a fake upstream speaking the vendors' wire protocols. The catalog gets a local model and two
 * models on the fake upstream.
 */
export async function startTextStack(
  opts: { syncTimeoutMs?: number; reconcileIntervalMs?: number; upstreamTimeoutMs?: number; parkBaseMs?: number } = {},
): Promise<TextStack> {
  const fake = await startFakeUpstream();
  const vhost: TestVhost = await createTestVhost();
  const bus = await connectBus({ url: vhost.url, name: "text-test" });
  let handler: RequestListener = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const textServer = createServer((req, res) => handler(req, res));
  const textPort = await listen(textServer, 0, "127.0.0.1");
  const gateway = await startGateway({ services: { text: `http://127.0.0.1:${textPort}` }, bus });
  const database: TestDatabase = await createTestDatabase(path.resolve(__dirname, "../.."));
  const text = await createTextService({
    databaseUrl: database.url,
    billingUrl: gateway.billingUrl,
    internalSecret: TEST_SECRET,
    logger: createLogger("text-test", process.env.LOG_LEVEL ?? "silent"),
    bus,
    env: { ...process.env, FAKE_UPSTREAM_KEY: "sk-fake-upstream" },
    syncTimeoutMs: opts.syncTimeoutMs ?? 10_000,
    upstreamTimeoutMs: opts.upstreamTimeoutMs ?? 5_000,
    defaultMaxTokens: 256,
    catalogRefreshMs: 200,
    reconcileIntervalMs: opts.reconcileIntervalMs ?? 100,
    workerStaleMs: 2_000,
    retentionHours: 48,
    upstreamRetryDelaysMs: [20, 50],
    parkBaseMs: opts.parkBaseMs ?? 1000,
  });
  handler = text.app;

  const url = gateway.url;
  const admin = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  await admin("PUT", `/admin/v1/models/${LOCAL_MODEL}`, { enabled: true, provider: { kind: "local" }, operations: { text: PRICES } });
  await admin("PUT", `/admin/v1/models/${FAKE_MODEL}`, {
    enabled: true,
    provider: { kind: "anthropic", base_url: fake.anthropicBaseUrl, upstream_model: "claude-fake-1", api_key_env: "FAKE_UPSTREAM_KEY" },
    operations: { text: PRICES },
  });
  await admin("PUT", `/admin/v1/models/${FAKE_CHAT_MODEL}`, {
    enabled: true,
    provider: { kind: "openai-chat", base_url: fake.openaiBaseUrl, upstream_model: "gpt-fake", api_key_env: "FAKE_UPSTREAM_KEY" },
    operations: { text: PRICES },
  });
  await text.catalog.refresh();

  return {
    url,
    gateway,
    text,
    fake,
    bus,
    admin,
    async call(key, p, body, headers = {}) {
      const res = await fetch(url + p, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      const raw = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // not JSON; the test looks at `text`
      }
      return { status: res.status, headers: res.headers, text: raw, json };
    },
    async balance(organizationId) {
      const r = await admin("GET", `/admin/v1/organizations/${organizationId}/balance`);
      return r.body as { balance_microrub: number; reserved_microrub: number; available_microrub: number };
    },
    async activeHolds() {
      const holds = await gateway.billing.services.holdReads.list({ status: "active", source: "text", limit: 1000 });
      return holds.length;
    },
    async close() {
      await text.close();
      await gateway.close();
      await closeServer(textServer);
      await bus.close();
      await vhost.drop();
      await fake.close();
      await database.drop();
    },
  };
}

/** Polls until `check` is true or fails the test after `ms`. */
export async function eventually(check: () => Promise<boolean>, ms = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
