import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { exited, OutputTail, hasExited, killOnParentExit, sleep, terminate } from "./child-process";
import { ServiceCatalog, SERVICE_NAMES, envPrefix, type Deployable, type ServiceName } from "@meter/contracts";
import { retryWhileAddressInUse } from "./port";
import { repoRoot } from "./repo-paths";
import type { InternalKeySet } from "./secrets";

export { envPrefix, type ServiceName };

/** Start order: billing first (everyone verifies keys and holds there), the gateway last. */
export const SERVICES: readonly ServiceName[] = ["billing-ledger", ...SERVICE_NAMES.filter((s) => s !== "billing-ledger" && s !== "gateway"), "gateway"];

/** Each service's local port (packages/contracts/src/services.ts). */
export const DEFAULT_PORTS = Object.fromEntries(SERVICE_NAMES.map((s) => [s, ServiceCatalog[s].port])) as Record<ServiceName, number>;

interface ProcessSpec {
  name: string;
  service: ServiceName;
  entry: string;
  /** Where the server answers /readyz (the gateway: its internal port); workers have none. */
  port?: number;
  /** Settings of this process alone (a second replica's port). */
  env?: Record<string, string>;
}

export interface SystemOptions {
  /** Settings for every process (secrets, database URLs, broker, switches). */
  env: Record<string, string>;
  /** Each process signs internal calls with its own deployable's key; all share the public list. */
  internalKeys: InternalKeySet;
  /** Each deployable's own RABBITMQ_URL (its broker user); a process not named gets env's. */
  brokerUrls?: Partial<Record<Deployable, string>>;
  /**
   * Each service's API port, which every other process is told. Tests take them from withAssignedPorts
   * (port.ts), which starts the system again on other ports when one was taken.
   */
  ports: Record<ServiceName, number>;
  /** The gateway's internal port, where the launcher asks for its /readyz. */
  gatewayInternalPort: number;
  host?: string;
  only?: readonly ServiceName[];
  /** Each line a process writes. */
  onOutput?: (process: string, line: string) => void;
  /** Restart a process that exits on its own (npm start); tests leave crashes to the test. */
  autoRestart?: boolean;
  readyTimeoutMs?: number;
  /** Extra node flags for every process (e.g. --cpu-prof when profiling a benchmark). */
  nodeArgs?: string[];
  /**
   * More API processes of a service, by their ports (`{ text: [port] }`): the second is process
   * `text-2`. There is no load balancer here: the gateway gets every replica's URL (its TEXT_URL takes
   * a comma-separated list) and spreads requests over them itself; other callers use the first replica.
   */
  replicaPorts?: Partial<Record<ServiceName, readonly number[]>>;
  /**
   * Processes run from another checkout (a rolling upgrade between two releases), by process name
   * (`text`, `text-2`, `gateway`): that checkout's root, and settings of its own on top of `env`.
   * The others run this checkout.
   */
  releases?: Record<string, ProcessRelease>;
}

/** Where a process's code comes from: a checkout (its root, with its own installed dependencies). */
export interface ProcessRelease {
  root: string;
  env?: Record<string, string>;
}

export interface RunningSystem {
  urls: Record<ServiceName, string>;
  /** The gateway's internal port: its /readyz and /metrics. */
  gatewayInternalUrl: string;
  /** The processes of a service, by name (`files`, `files-worker`, ...). */
  processes(): string[];
  /** Kills one service's processes with a signal (a crash test uses SIGKILL) and does not restart them. */
  kill(service: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed service again and waits until it is ready. */
  start(service: ServiceName): Promise<void>;
  /**
   * Stops one process as a rollout does (SIGTERM, then waits for its exit), starts it again on its port
   * (retried while that port is taken) and waits until it is ready; with `release`, from that checkout
   * from now on (`{ root: repoRoot() }`: this one).
   */
  restart(process: string, release?: ProcessRelease): Promise<void>;
  /** The checkout each process runs (its root). */
  releaseOf(process: string): string;
  /** A running process's pid (undefined once it exited). */
  pidOf(process: string): number | undefined;
  stop(): Promise<void>;
}

/** The process entry points of a service that exist in this checkout; `extraPorts`: further API replicas. */
function specsOf(service: ServiceName, port: number, extraPorts: readonly number[] = []): ProcessSpec[] {
  const dir = path.join(repoRoot(), ServiceCatalog[service].dir);
  const specs: ProcessSpec[] = [];
  const main = path.join(dir, "src", "main.ts");
  const worker = path.join(dir, "src", "worker.ts");
  if (existsSync(main)) {
    specs.push({ name: service, service, entry: main, port });
    extraPorts.forEach((extra, i) =>
      specs.push({ name: `${service}-${i + 2}`, service, entry: main, port: extra, env: { [`${envPrefix(service)}_PORT`]: String(extra) } }),
    );
  }
  if (existsSync(worker)) specs.push({ name: `${service}-worker`, service, entry: worker });
  return specs;
}

/** `text-2` signs as `text`: a replica is the same deployable. */
function deployableOf(spec: ProcessSpec): Deployable {
  return (spec.name === spec.service || spec.name === `${spec.service}-worker` ? spec.name : spec.service) as Deployable;
}

export function availableServices(): ServiceName[] {
  return SERVICES.filter((s) => specsOf(s, 0).length > 0);
}

/**
 * Runs every service of the checkout as its own Node process (TypeScript through tsx), wires their
 * ports and URLs into each other's environment, and waits until each answers /readyz.
 */
export async function startSystem(opts: SystemOptions): Promise<RunningSystem> {
  const host = opts.host ?? "127.0.0.1";
  const urls = Object.fromEntries(SERVICES.map((s) => [s, `http://${host}:${opts.ports[s]}`])) as Record<ServiceName, string>;
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...opts.env, HOST: host };
  for (const s of SERVICES) {
    env[`${envPrefix(s)}_PORT`] = String(opts.ports[s]);
    env[`${envPrefix(s)}_URL`] = urls[s];
    // A worker's health server takes any free port unless told otherwise: nobody routes to it here.
    env[`${envPrefix(s)}_WORKER_PORT`] ??= "0";
  }
  // The gateway answers /readyz only on its internal port.
  env.GATEWAY_INTERNAL_PORT = String(opts.gatewayInternalPort);
  const readinessPort = (service: ServiceName): number => (service === "gateway" ? opts.gatewayInternalPort : opts.ports[service]);
  const extraPorts = Object.fromEntries(SERVICES.map((s) => [s, opts.replicaPorts?.[s] ?? []])) as Record<ServiceName, readonly number[]>;
  // The gateway reaches every replica of a service itself.
  const gatewayEnv = Object.fromEntries(
    SERVICES.filter((s) => extraPorts[s].length > 0).map((s) => [
      `${envPrefix(s)}_URL`,
      [opts.ports[s], ...extraPorts[s]].map((p) => `http://${host}:${p}`).join(","),
    ]),
  );
  const specsFor = (service: ServiceName): ProcessSpec[] =>
    specsOf(service, readinessPort(service), extraPorts[service]).map((spec) =>
      service === "gateway" ? { ...spec, env: { ...spec.env, ...gatewayEnv } } : spec,
    );
  const wanted = (opts.only ?? SERVICES).filter((s) => availableServices().includes(s));
  const children = new Map<string, { child: ChildProcess; tail: OutputTail }>();
  const stopped = new Set<ServiceName>();
  /** Processes being restarted on purpose: their exit is not a crash. */
  const restarting = new Set<string>();
  let shuttingDown = false;

  const releases = new Map(Object.entries(opts.releases ?? {}));
  const launch = (spec: ProcessSpec): void => {
    const tail = new OutputTail((line) => opts.onOutput?.(spec.name, line));
    const release = releases.get(spec.name);
    const root = release?.root ?? repoRoot();
    // tsx from the process's own checkout (`--import` resolves from its working directory).
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), "--import", "tsx", path.join(root, path.relative(repoRoot(), spec.entry))], {
      cwd: root,
      env: {
        ...env,
        ...spec.env,
        // Every process of a local system runs the same release, so none needs the Ed25519 signatures
        // kept for a rolling upgrade (docs/deploy.md, Upgrading): MACs, a tenth of the CPU.
        INTERNAL_AUTH_SIGN: env.INTERNAL_AUTH_SIGN ?? "mac",
        // Likewise bus commands: a MAC for their one consumer instead of an Ed25519 signature.
        BUS_COMMAND_SIGN: env.BUS_COMMAND_SIGN ?? "mac",
        INTERNAL_SIGNING_KEY: opts.internalKeys.signingKeys[deployableOf(spec)],
        INTERNAL_PUBLIC_KEYS: opts.internalKeys.publicKeys,
        // billing-ledger's grant key, its own: it signs what it grants and checks the signatures it is shown.
        ...(spec.service === "billing-ledger"
          ? { GRANT_SIGNING_KEY: opts.internalKeys.grantSigningKey, GRANT_PUBLIC_KEYS: opts.internalKeys.grantPublicKeys }
          : {}),
        ...(opts.brokerUrls?.[deployableOf(spec)] ? { RABBITMQ_URL: opts.brokerUrls[deployableOf(spec)] } : {}),
        ...release?.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    tail.attach(child.stdout);
    tail.attach(child.stderr);
    killOnParentExit(child);
    children.set(spec.name, { child, tail });
    child.once("exit", (code, signal) => {
      if (shuttingDown || stopped.has(spec.service) || restarting.has(spec.name)) return;
      opts.onOutput?.(spec.name, `exited unexpectedly (${signal ?? `code ${code}`})`);
      if (opts.autoRestart) {
        void sleep(1000).then(() => {
          if (!shuttingDown && !stopped.has(spec.service)) launch(spec);
        });
      }
    });
  };

  const waitReady = async (spec: ProcessSpec): Promise<void> => {
    if (spec.port === undefined) return;
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
    for (;;) {
      const entry = children.get(spec.name);
      if (entry && hasExited(entry.child)) {
        throw new Error(`${spec.name} exited while starting:\n${entry.tail.toString()}`);
      }
      try {
        const res = await fetch(`http://${host}:${spec.port}/readyz`);
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`${spec.name} was not ready within ${opts.readyTimeoutMs ?? 60_000} ms:\n${entry?.tail.toString() ?? ""}`);
      await sleep(150);
    }
  };

  const startService = async (service: ServiceName): Promise<void> => {
    stopped.delete(service);
    const specs = specsFor(service);
    for (const spec of specs) launch(spec);
    await Promise.all(specs.map(waitReady));
  };

  /** A process back on the port the others know it by: launched again while that port is taken. */
  const relaunch = async (spec: ProcessSpec): Promise<void> => {
    // A launch that finds its port taken exits: that is no crash.
    restarting.add(spec.name);
    try {
      await retryWhileAddressInUse(async () => {
        launch(spec);
        await waitReady(spec);
      });
    } finally {
      restarting.delete(spec.name);
    }
  };

  const restart = async (name: string, release?: ProcessRelease): Promise<void> => {
    const spec = SERVICES.flatMap(specsFor).find((s) => s.name === name);
    const entry = children.get(name);
    if (!spec || !entry) throw new Error(`no process ${name} (running: ${[...children.keys()].join(", ")})`);
    restarting.add(name);
    try {
      await terminate(entry.child, 30_000);
    } finally {
      restarting.delete(name);
    }
    if (release) releases.set(name, release);
    await relaunch(spec);
  };

  const stopAll = async (): Promise<void> => {
    shuttingDown = true;
    // Reverse order: the gateway stops taking requests before the services behind it go.
    const order = [...children.entries()].reverse();
    for (const [, { child }] of order) await terminate(child, 15_000);
  };

  try {
    // billing-ledger first: every other service reads keys or the catalog from it. The rest start
    // together (each waits on its own readiness), which halves the start on two cores.
    if (wanted.includes("billing-ledger")) await startService("billing-ledger");
    await Promise.all(wanted.filter((s) => s !== "billing-ledger").map(startService));
  } catch (e) {
    await stopAll();
    throw e;
  }

  return {
    urls,
    gatewayInternalUrl: `http://${host}:${opts.gatewayInternalPort}`,
    processes: () => [...children.keys()],
    async kill(service, signal = "SIGKILL") {
      stopped.add(service);
      const mine = [...children.values()].filter(({ child }) => !hasExited(child) && specsFor(service).some((s) => children.get(s.name)?.child === child));
      for (const { child } of mine) child.kill(signal);
      await Promise.all(mine.map(({ child }) => exited(child)));
    },
    async start(service) {
      stopped.delete(service);
      await Promise.all(specsFor(service).map(relaunch));
    },
    restart,
    releaseOf: (name) => releases.get(name)?.root ?? repoRoot(),
    pidOf(name) {
      const entry = children.get(name);
      return entry && !hasExited(entry.child) ? entry.child.pid : undefined;
    },
    stop: stopAll,
  };
}
