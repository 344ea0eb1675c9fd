import { SERVICES, freePort, startSystem, type RunningSystem, type ServiceName } from "@meter/local-infra";
import { prepareEnvironment } from "./environment";
import type { FakeUpstream } from "./fake-upstream";
import { testKeySet } from "./internal-auth";
import { booksCheck, operatorOf, seedTestModels, type Operator, type TestAccount } from "./operator";

export interface SystemUnderTest extends Operator {
  url: string;
  adminToken: string;
  system: RunningSystem;
  /** The settings every process got: database URLs, the vhost, the object store... */
  env: Record<string, string>;
  /** The in-process fake upstream (an external one when given). */
  fake: FakeUpstream;
  account(opts?: { credit?: number; dailyBudget?: number; scopes?: string[] }): Promise<TestAccount>;
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
    upstream?: FakeUpstream | { anthropicBaseUrl: string };
    nodeArgs?: string[];
    /** Several API processes of a service (startSystem's `replicas`). */
    replicas?: Partial<Record<ServiceName, number>>;
    /** Each process's broker URL as it is to be used (through a BrokerProxy, say). */
    brokerUrl?: (url: string) => string;
    /** How long each process may take to be ready (startSystem's; 60 s by default). */
    readyTimeoutMs?: number;
  } = {},
): Promise<SystemUnderTest> {
  const only = opts.only ?? ["billing-ledger", "text", "gateway"];
  const environment = await prepareEnvironment(only, opts.upstream && "configure" in opts.upstream ? { upstream: opts.upstream } : {});
  try {
    const ports = Object.fromEntries(await Promise.all(SERVICES.map(async (s) => [s, await freePort()] as const))) as Record<ServiceName, number>;
    const brokerUrls = await environment.vhost.deployableUrls();
    const brokerUrl = opts.brokerUrl;
    const system = await startSystem({
      internalKeys: testKeySet(),
      // Each process as its own broker user, with only its rights, as npm start runs them.
      brokerUrls: brokerUrl ? (Object.fromEntries(Object.entries(brokerUrls).map(([d, u]) => [d, brokerUrl(u)])) as typeof brokerUrls) : brokerUrls,
      ports,
      only,
      env: {
        ...environment.env,
        LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "error",
        CATALOG_REFRESH_MS: "200",
        RECONCILE_INTERVAL_MS: "200",
        WORKER_STALE_MS: "2000",
        ...opts.env,
      },
      ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
      ...(opts.replicas ? { replicas: opts.replicas } : {}),
      ...(opts.readyTimeoutMs ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
      onOutput: process.env.E2E_LOG_LEVEL ? (name, line) => console.log(`[${name}] ${line}`) : undefined,
    });
    const url = system.urls.gateway;
    const operator = operatorOf(url, environment.adminToken);
    if (only.includes("billing-ledger") && only.includes("gateway")) {
      await seedTestModels(operator, opts.upstream ?? environment.fake);
      // The services reload the catalog every 200 ms here (and at once on the change event).
      await new Promise((r) => setTimeout(r, 500));
    }
    const billing = () => {
      if (!environment.billingDatabaseUrl) throw new Error("billing-ledger is not part of this system");
      return environment.billingDatabaseUrl;
    };
    return {
      ...operator,
      url,
      adminToken: environment.adminToken,
      system,
      env: environment.env,
      fake: environment.fake,
      async assertBooksBalance() {
        const report = booksCheck(billing());
        if (!report.ok) throw new Error(report.output);
      },
      booksCheck: () => booksCheck(billing()),
      async close() {
        await system.stop();
        await environment.close();
      },
    };
  } catch (e) {
    await environment.close();
    throw e;
  }
}
