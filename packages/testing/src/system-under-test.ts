import { SERVICES, startSystem, withAssignedPorts, type ProcessRelease, type RunningSystem, type ServiceName } from "@meter/local-infra";
import type { BrokerRights, BusDeployable } from "@meter/contracts";
import type { Migrate } from "./database";
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
  /** Each service's database, by service. */
  databaseUrls: Partial<Record<ServiceName, string>>;
  /** The in-process fake upstream (an external one when given). */
  fake: FakeUpstream;
  account(opts?: { credit?: number; dailyBudget?: number; scopes?: string[] }): Promise<TestAccount>;
  assertBooksBalance(): Promise<void>;
  /** Runs `pnpm ledger:check` on the billing database: its printout and whether the books balance. */
  booksCheck(): { ok: boolean; output: string };
  /** Gives every process's broker user other rights (default this release's), as running broker-users.sh does. */
  grantBrokerRights(rightsOf?: (deployable: BusDeployable) => BrokerRights): Promise<void>;
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
    /** Processes run from another release's checkout (startSystem's `releases`). */
    releases?: Record<string, ProcessRelease>;
    /** How the databases get their schema (createTestDatabase's; another release's own tool). */
    migrate?: Migrate;
    /** Each deployable's broker rights (default this release's); a test of an upgrade starts with the previous release's. */
    brokerRights?: (deployable: BusDeployable) => BrokerRights;
  } = {},
): Promise<SystemUnderTest> {
  const only = opts.only ?? ["billing-ledger", "text", "gateway"];
  const environment = await prepareEnvironment(only, {
    ...(opts.upstream && "configure" in opts.upstream ? { upstream: opts.upstream } : {}),
    ...(opts.migrate ? { migrate: opts.migrate } : {}),
  });
  try {
    const brokerUrls = await environment.vhost.deployableUrls(opts.brokerRights);
    const brokerUrl = opts.brokerUrl;
    const system = await withAssignedPorts(systemPortCount(opts.replicas), (assigned) =>
      startSystem({
        internalKeys: testKeySet(),
        // Each process as its own broker user, with only its rights, as npm start runs them.
        brokerUrls: brokerUrl ? (Object.fromEntries(Object.entries(brokerUrls).map(([d, u]) => [d, brokerUrl(u)])) as typeof brokerUrls) : brokerUrls,
        ...systemPorts(assigned, opts.replicas),
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
        ...(opts.readyTimeoutMs ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
        ...(opts.releases ? { releases: opts.releases } : {}),
        onOutput: process.env.E2E_LOG_LEVEL ? (name, line) => console.log(`[${name}] ${line}`) : undefined,
      }),
    );
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
      databaseUrls: environment.databaseUrls,
      fake: environment.fake,
      async assertBooksBalance() {
        const report = booksCheck(billing());
        if (!report.ok) throw new Error(report.output);
      },
      booksCheck: () => booksCheck(billing()),
      grantBrokerRights: (rightsOf) => environment.vhost.grantRights(rightsOf),
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

function extraReplicas(replicas: Partial<Record<ServiceName, number>> = {}): number {
  return Object.values(replicas).reduce((sum, n) => sum + Math.max(0, n - 1), 0);
}

/**
 * A system's ports out of assigned ones (withAssignedPorts): each service's, the gateway's internal
 * one, then each further replica's.
 */
function systemPorts(
  assigned: readonly number[],
  replicas: Partial<Record<ServiceName, number>> = {},
): { ports: Record<ServiceName, number>; gatewayInternalPort: number; replicaPorts: Partial<Record<ServiceName, number[]>> } {
  let taken = 0;
  const take = (): number => {
    const port = assigned[taken++];
    if (port === undefined) throw new Error(`systemPorts: ${assigned.length} ports are not enough`);
    return port;
  };
  const ports = Object.fromEntries(SERVICES.map((s) => [s, take()])) as Record<ServiceName, number>;
  const gatewayInternalPort = take();
  const replicaPorts = Object.fromEntries(Object.entries(replicas).map(([s, n]) => [s, Array.from({ length: Math.max(0, n - 1) }, take)])) as Partial<
    Record<ServiceName, number[]>
  >;
  return { ports, gatewayInternalPort, replicaPorts };
}

/** How many ports systemPorts takes for a system with these replicas. */
function systemPortCount(replicas: Partial<Record<ServiceName, number>> = {}): number {
  return SERVICES.length + 1 + extraReplicas(replicas);
}
