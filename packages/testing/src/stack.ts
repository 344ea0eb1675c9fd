import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { envPrefix, SERVICE_NAMES, ServiceCatalog, type BusDeployable, type Deployable, type ServiceName } from "@meter/contracts";
import { repoRoot, retryWhileAddressInUse, withAssignedPorts } from "@meter/local-infra";
import { closeServer, createLogger, listen, type Composition, type Logger } from "@meter/service-kit";
import { prepareEnvironment } from "./environment";
import type { FakeUpstream } from "./fake-upstream";
import { testKeyEnv } from "./internal-auth";
import { booksCheck, operatorOf, seedTestModels, type Operator } from "./operator";
import { startServiceProcess, type ServiceProcess } from "./service-process";

/** A service's composition module, as every one exports it (docs/architecture.md). */
interface CompositionModule {
  compose?: (config: unknown, overrides: { logger: Logger }) => Promise<Composition>;
}

interface ConfigModule {
  loadConfig(env: NodeJS.ProcessEnv): unknown;
}

export interface Stack extends Operator {
  /** The gateway's public URL (when the gateway is part of the stack). */
  url: string;
  urls: Partial<Record<ServiceName, string>>;
  /** The settings every service got: database URLs, the vhost, ports and URLs of each other. */
  env: Record<string, string>;
  fake: FakeUpstream;
  /** A running service's composition (its app, database, and what its composition root returns). */
  composition<T = Composition>(name: ServiceName): T;
  /** A queue worker's process (files-worker, media-jobs-worker), to kill or restart in a test. */
  worker(name: Deployable): ServiceProcess;
  /** Takes a service's HTTP port down (connections refused) and brings it back on the same port. */
  stopHttp(service: ServiceName): Promise<void>;
  startHttp(service: ServiceName): Promise<void>;
  assertBooksBalance(): Promise<void>;
  close(): Promise<void>;
}

export interface StackOptions {
  /** The services to run; each is built by its own composition root, in this process. */
  services: readonly ServiceName[];
  /** Settings for every service (a test's own switches). */
  env?: Record<string, string>;
  /** Run the queue workers of the services that have one, each as its own process (default true). */
  workers?: boolean;
  logLevel?: string;
}

/**
 * The system in one process: each service built by its exported composition root on its own port,
 * with fresh databases, a fresh vhost, the object store and clamd when files runs, and a fake
 * upstream. Tests reach any service's internals through `composition(name)`, and no service's test
 * imports another service: the stack finds each composition root by the service list.
 */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const order = orderOf(opts.services);
  const environment = await prepareEnvironment(order);
  const logger = createLogger("stack", opts.logLevel ?? process.env.LOG_LEVEL ?? "silent");
  const running = new Map<string, { composition: Composition; server: Server | undefined; port: number }>();
  /** Each service's server, bound before any service is built: every one is told the others' ports. */
  const servers = new Map<ServiceName, Server>();
  const workers = new Map<Deployable, ServiceProcess>();
  const close = async () => {
    for (const worker of workers.values()) await worker.stop();
    for (const [, part] of [...running.entries()].reverse()) {
      if (part.server?.listening) {
        part.server.closeAllConnections();
        await closeServer(part.server);
      }
      await part.composition.close().catch(() => undefined);
    }
    for (const server of servers.values()) if (server.listening) await closeServer(server);
    await environment.close();
  };
  try {
    for (const s of order) servers.set(s, createServer());
    // Assigned ports, not port 0: stopHttp/startHttp give a port up and take it back, and a port the
    // kernel hands out could go to another test's server meanwhile (docs/architecture.md, "Tests", Ports).
    const ports = Object.fromEntries(
      await Promise.all(order.map(async (s) => [s, await withAssignedPorts(1, ([p]) => listen(servers.get(s)!, p!, "127.0.0.1"))] as const)),
    ) as Record<ServiceName, number>;
    const env: Record<string, string> = {
      ...environment.env,
      LOG_LEVEL: opts.logLevel ?? process.env.LOG_LEVEL ?? "silent",
      CATALOG_REFRESH_MS: "200",
      RECONCILE_INTERVAL_MS: "100",
      WORKER_STALE_MS: "2000",
      GATEWAY_INTERNAL_PORT: "0",
    };
    for (const s of order) {
      env[`${envPrefix(s)}_PORT`] = String(ports[s]);
      env[`${envPrefix(s)}_URL`] = `http://127.0.0.1:${ports[s]}`;
      env[`${envPrefix(s)}_WORKER_PORT`] = "0";
    }
    Object.assign(env, opts.env);
    // Each service and worker as its own broker user, as deployed; env.RABBITMQ_URL stays the vhost's
    // administrator's, for the tests' own buses (unless a test sets a broker of its own).
    const brokerUrls = opts.env?.RABBITMQ_URL === undefined ? await environment.vhost.deployableUrls() : undefined;
    const busOf = (deployable: Deployable): Record<string, string> => {
      const url = brokerUrls?.[deployable as BusDeployable];
      return url ? { RABBITMQ_URL: url } : {};
    };

    for (const service of order) {
      const dir = path.join(repoRoot(), ServiceCatalog[service].dir, "src");
      const { loadConfig } = (await import(path.join(dir, "config.ts"))) as ConfigModule;
      const api = (await import(path.join(dir, "composition.ts"))) as CompositionModule;
      if (!api.compose) throw new Error(`${service}: its composition.ts exports no compose()`);
      const composition = await api.compose(loadConfig({ ...env, ...busOf(service), ...testKeyEnv(service) }), { logger: logger.child({ service }) });
      const server = servers.get(service)!;
      server.on("request", composition.app);
      running.set(service, { composition, server, port: ports[service] });
      // A worker is a process of its own, as deployed: it loads what only workers run (ES modules
      // such as file-type, native models) outside this test's module system.
      const workerEntry = path.join(dir, "worker.ts");
      if (ServiceCatalog[service].worker && opts.workers !== false && existsSync(workerEntry)) {
        const deployable = `${service}-worker` as Deployable;
        workers.set(
          deployable,
          await startServiceProcess(workerEntry, repoRoot(), { ...env, ...busOf(deployable), ...testKeyEnv(deployable), LOG_LEVEL: "info" }, 60_000),
        );
      }
    }

    const urls = Object.fromEntries(order.map((s) => [s, `http://127.0.0.1:${ports[s]}`])) as Partial<Record<ServiceName, string>>;
    const url = urls.gateway ?? "";
    const operator = operatorOf(url, environment.adminToken);
    if (order.includes("gateway") && order.includes("billing-ledger")) {
      await seedTestModels(operator, environment.fake);
      // Services reload the catalog every 200 ms here (and at once on the change event).
      await new Promise((r) => setTimeout(r, 400));
    }
    const part = (name: string) => {
      const p = running.get(name);
      if (!p) throw new Error(`${name} is not running in this stack`);
      return p;
    };
    return {
      ...operator,
      url,
      urls,
      env,
      fake: environment.fake,
      composition: <T>(name: ServiceName) => part(name).composition as T,
      worker(name) {
        const w = workers.get(name);
        if (!w) throw new Error(`${name} is not running in this stack`);
        return w;
      },
      async stopHttp(service) {
        const p = part(service);
        p.server?.closeAllConnections();
        if (p.server) await closeServer(p.server);
      },
      async startHttp(service) {
        const p = part(service);
        p.server = createServer(p.composition.app);
        const server = p.server;
        // Its old port, which the others know; only an explicit bind can have taken it meanwhile.
        await retryWhileAddressInUse(() => listen(server, p.port, "127.0.0.1"));
      },
      async assertBooksBalance() {
        if (!environment.billingDatabaseUrl) throw new Error("billing-ledger is not part of this stack");
        const report = booksCheck(environment.billingDatabaseUrl);
        if (!report.ok) throw new Error(report.output);
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Billing first (everyone verifies keys and places holds there), the gateway last. */
function orderOf(services: readonly ServiceName[]): ServiceName[] {
  return SERVICE_NAMES.filter((s) => services.includes(s) && s !== "gateway")
    .sort((a, b) => (a === "billing-ledger" ? -1 : b === "billing-ledger" ? 1 : 0))
    .concat(services.includes("gateway") ? ["gateway"] : []);
}
