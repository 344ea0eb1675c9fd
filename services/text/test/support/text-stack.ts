import { FAKE_MODEL, LOCAL_MODEL, PRICES, startStack, type FakeUpstream, type Stack, type TestAccount } from "@meter/testing";
import type { TextComposition } from "../../src/composition";

export { FAKE_MODEL, LOCAL_MODEL, PRICES };
export const FAKE_CHAT_MODEL = "fake-chat";

type Balance = { balance_microrub: number; reserved_microrub: number; available_microrub: number };

export interface TextStack {
  url: string;
  /** billing-ledger, text and the gateway, each built by its composition root in this process. */
  stack: Stack;
  /** The text service as its composition root built it: app, runner, reconciler, database... */
  text: TextComposition;
  fake: FakeUpstream;
  /** The text service's test database and the vhost, for a second text process in a test. */
  databaseUrl: string;
  vhostUrl: string;
  /** A user, organization with credit (1 000 000 microrub by default), and a key with every scope. */
  account(opts?: { credit?: number; dailyBudget?: number; scopes?: string[] }): Promise<TestAccount>;
  /** Admin API call through the gateway. */
  admin(method: string, p: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** A public API call with a key, returning status, headers and the raw and parsed body. */
  call(
    key: string,
    p: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; text: string; json: Record<string, unknown> }>;
  balance(organizationId: string): Promise<Balance>;
  /**
   * The balance once every hold of the organization is resolved. A final answer's settlement or
   * release reaches billing over the bus a moment after the answer; until then the hold still counts.
   */
  settledBalance(organizationId: string): Promise<Balance>;
  /** Holds of the text service still active in billing. */
  activeHolds(): Promise<number>;
  /** Takes billing's HTTP port down (connections refused) and brings it back on the same port. */
  stopBillingHttp(): Promise<void>;
  startBillingHttp(): Promise<void>;
  assertBooksBalance(): Promise<void>;
  close(): Promise<void>;
}

/**
 * billing-ledger, the gateway and the text service in this process (the test stack), on real
 * PostgreSQL and RabbitMQ, with a fake upstream speaking the vendors' wire protocols. The catalog gets
 * the local model and two models on the fake upstream.
 */
export async function startTextStack(
  opts: { syncTimeoutMs?: number; reconcileIntervalMs?: number; upstreamTimeoutMs?: number; parkBaseMs?: number; env?: Record<string, string> } = {},
): Promise<TextStack> {
  const stack = await startStack({
    services: ["billing-ledger", "text", "gateway"],
    env: {
      TEXT_SYNC_TIMEOUT_MS: String(opts.syncTimeoutMs ?? 10_000),
      UPSTREAM_TIMEOUT_MS: String(opts.upstreamTimeoutMs ?? 5_000),
      DEFAULT_MAX_OUTPUT_TOKENS: "256",
      RECONCILE_INTERVAL_MS: String(opts.reconcileIntervalMs ?? 100),
      TEXT_PARK_BASE_MS: String(opts.parkBaseMs ?? 1000),
      TEXT_RECORD_LEASE_MS: "2000",
      TEXT_UPSTREAM_RETRY_DELAYS_MS: "20,50",
      ...opts.env,
    },
  });
  const text = stack.composition<TextComposition>("text");
  const url = stack.url;
  const admin = async (method: string, p: string, body?: unknown) => {
    try {
      return { status: 200, body: await stack.admin(method, p, body) };
    } catch (e) {
      const m = /-> (\d{3}) (.*)$/s.exec((e as Error).message);
      if (!m) throw e;
      return { status: Number(m[1]), body: JSON.parse(m[2]!) as Record<string, unknown> };
    }
  };
  await stack.admin("PUT", `/admin/v1/models/${FAKE_MODEL}`, {
    enabled: true,
    provider: { kind: "anthropic", base_url: stack.fake.anthropicBaseUrl, upstream_model: "claude-fake-1", api_key_env: "FAKE_UPSTREAM_API_KEY" },
    operations: { text: PRICES },
  });
  await stack.admin("PUT", `/admin/v1/models/${FAKE_CHAT_MODEL}`, {
    enabled: true,
    provider: { kind: "openai-chat", base_url: stack.fake.openaiBaseUrl, upstream_model: "gpt-fake", api_key_env: "FAKE_UPSTREAM_API_KEY" },
    operations: { text: PRICES },
  });
  await text.catalog.refresh();

  const balance = (organizationId: string) => stack.admin<Balance>("GET", `/admin/v1/organizations/${organizationId}/balance`);

  return {
    url,
    stack,
    text,
    fake: stack.fake,
    databaseUrl: stack.env.TEXT_DATABASE_URL!,
    vhostUrl: stack.env.RABBITMQ_URL!,
    account: (o = {}) => stack.account({ ...o, credit: o.credit ?? 1_000_000 }),
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
    balance,
    settledBalance: (organizationId) => stack.settledBalance(organizationId),
    async activeHolds() {
      const holds = await stack.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&source=text&limit=500");
      return holds.data.length;
    },
    stopBillingHttp: () => stack.stopHttp("billing-ledger"),
    startBillingHttp: () => stack.startHttp("billing-ledger"),
    assertBooksBalance: () => stack.assertBooksBalance(),
    close: () => stack.close(),
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
