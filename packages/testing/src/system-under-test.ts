import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { createServer } from "node:net";
import path from "node:path";
import { startSystem, SERVICES, type RunningSystem, type ServiceName } from "@meter/local-infra";
import { createTestDatabase, type TestDatabase } from "./database";
import { createTestVhost, type TestVhost } from "./rabbitmq";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream";

const root = path.resolve(__dirname, "../../..");
export const LOCAL_MODEL = "meter-local-echo";
export const FAKE_MODEL = "fake-claude";
export const PRICES = { input_microrub_per_1k_tokens: 1_000, output_microrub_per_1k_tokens: 3_000 };

export interface SystemUnderTest {
  url: string;
  adminToken: string;
  system: RunningSystem;
  /** The in-process fake upstream (undefined when an external one was given). */
  fake: FakeUpstream;
  admin<T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<T>;
  /** A user and organization with `credit` microrub and a key with every scope. */
  account(opts?: { credit?: number; dailyBudget?: number }): Promise<{ key: string; keyId: string; organizationId: string }>;
  assertBooksBalance(): Promise<void>;
  /** Runs `pnpm ledger:check` on the billing database: its printout and whether the books balance. */
  booksCheck(): { ok: boolean; output: string };
  close(): Promise<void>;
}

/**
 * The real thing: each service its own process (as npm start runs them), on fresh databases and a
 * fresh RabbitMQ vhost, with a fake upstream model provider speaking the vendors' protocols.
 */
export async function startSystemUnderTest(
  opts: {
    only?: ServiceName[];
    env?: Record<string, string>;
    /** An upstream already running elsewhere (a benchmark keeps it out of this process). */
    upstream?: { anthropicBaseUrl: string };
    nodeArgs?: string[];
  } = {},
): Promise<SystemUnderTest> {
  const fake = await startFakeUpstream();
  const upstream = opts.upstream ?? fake;
  const vhost: TestVhost = await createTestVhost();
  const databases: Record<string, TestDatabase> = {};
  for (const service of ["billing-ledger", "text"]) databases[service] = await createTestDatabase(path.join(root, "services", service));
  const adminToken = `adm_${randomBytes(16).toString("hex")}`;
  const ports = Object.fromEntries(await Promise.all(SERVICES.map(async (s) => [s, await freePort()] as const))) as Record<ServiceName, number>;
  const system = await startSystem({
    ports,
    only: opts.only ?? ["billing-ledger", "text", "gateway"],
    env: {
      INTERNAL_SECRET: randomBytes(24).toString("hex"),
      ADMIN_TOKEN: adminToken,
      RABBITMQ_URL: vhost.url,
      BILLING_LEDGER_DATABASE_URL: databases["billing-ledger"]!.url,
      TEXT_DATABASE_URL: databases.text!.url,
      FAKE_UPSTREAM_KEY: "sk-fake-upstream",
      LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "error",
      CATALOG_REFRESH_MS: "200",
      RECONCILE_INTERVAL_MS: "200",
      WORKER_STALE_MS: "2000",
      ...opts.env,
    },
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    onOutput: process.env.E2E_LOG_LEVEL ? (name, line) => console.log(`[${name}] ${line}`) : undefined,
  });
  const url = system.urls.gateway;
  const admin = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as T;
    if (!res.ok) throw new Error(`${method} ${p} -> ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  await admin("PUT", `/admin/v1/models/${LOCAL_MODEL}`, { enabled: true, provider: { kind: "local" }, operations: { text: PRICES } });
  await admin("PUT", `/admin/v1/models/${FAKE_MODEL}`, {
    enabled: true,
    provider: { kind: "anthropic", base_url: upstream.anthropicBaseUrl, api_key_env: "FAKE_UPSTREAM_KEY" },
    operations: { text: PRICES },
  });
  // The text service reloads the catalog every 200 ms here.
  await new Promise((r) => setTimeout(r, 500));

  return {
    url,
    adminToken,
    system,
    fake,
    admin,
    async account({ credit = 1_000_000_000, dailyBudget = 1_000_000_000 }: { credit?: number; dailyBudget?: number } = {}) {
      const user = await admin<{ id: string }>("POST", "/admin/v1/users", { email: `e2e-${randomUUID()}@example.test` });
      const org = await admin<{ id: string }>("POST", "/admin/v1/organizations", { name: "e2e" });
      await admin("POST", `/admin/v1/organizations/${org.id}/members`, { user_id: user.id });
      await admin("POST", `/admin/v1/organizations/${org.id}/credits`, { amount_microrub: credit, reference: "e2e" });
      const key = await admin<{ id: string; key: string }>("POST", "/admin/v1/keys", {
        user_id: user.id,
        organization_id: org.id,
        scopes: ["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"],
        daily_budget_microrub: dailyBudget,
      });
      return { key: key.key, keyId: key.id, organizationId: org.id };
    },
    async assertBooksBalance() {
      const report = booksCheck(databases["billing-ledger"]!.url);
      if (!report.ok) throw new Error(report.output);
    },
    booksCheck: () => booksCheck(databases["billing-ledger"]!.url),
    async close() {
      await system.stop();
      await fake.close();
      for (const d of Object.values(databases)) await d.drop();
      await vhost.drop();
    },
  };
}

function booksCheck(url: string): { ok: boolean; output: string } {
  const r = spawnSync(path.join(root, "node_modules", ".bin", "tsx"), [path.join(root, "services/billing-ledger/src/cli/ledger-check.ts"), "--url", url], {
    encoding: "utf8",
  });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
