import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { exited, OutputTail, hasExited, killOnParentExit, sleep, terminate } from "./child-process";
import { repoRoot } from "./repo-paths";

export type ServiceName = "billing-ledger" | "text" | "media-jobs" | "files" | "mcp" | "gateway";

/** Start order: billing first (everyone verifies keys and holds there), the gateway last. */
export const SERVICES: readonly ServiceName[] = ["billing-ledger", "text", "media-jobs", "files", "mcp", "gateway"];

export const DEFAULT_PORTS: Record<ServiceName, number> = {
  gateway: 8080,
  text: 8081,
  "media-jobs": 8082,
  files: 8083,
  "billing-ledger": 8084,
  mcp: 8085,
};

/** `media-jobs` -> `MEDIA_JOBS`: the prefix of a service's settings (…_PORT, …_URL, …_DATABASE_URL). */
export function envPrefix(service: ServiceName): string {
  return service.toUpperCase().replace(/-/g, "_");
}

interface ProcessSpec {
  name: string;
  service: ServiceName;
  entry: string;
  /** Servers answer /readyz on their port; workers have none. */
  port?: number;
}

export interface SystemOptions {
  /** Settings for every process (secrets, database URLs, broker, switches). */
  env: Record<string, string>;
  ports: Record<ServiceName, number>;
  host?: string;
  only?: readonly ServiceName[];
  /** Each line a process writes. */
  onOutput?: (process: string, line: string) => void;
  /** Restart a process that exits on its own (npm start); tests leave crashes to the test. */
  autoRestart?: boolean;
  readyTimeoutMs?: number;
  /** Extra node flags for every process (e.g. --cpu-prof when profiling a benchmark). */
  nodeArgs?: string[];
}

export interface RunningSystem {
  urls: Record<ServiceName, string>;
  /** The processes of a service, by name (`files`, `files-worker`, ...). */
  processes(): string[];
  /** Kills one service's processes with a signal (a crash test uses SIGKILL) and does not restart them. */
  kill(service: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed service again and waits until it is ready. */
  start(service: ServiceName): Promise<void>;
  stop(): Promise<void>;
}

/** The process entry points of a service that exist in this checkout. */
function specsOf(service: ServiceName, port: number): ProcessSpec[] {
  const dir = service === "gateway" ? path.join(repoRoot(), "gateway") : path.join(repoRoot(), "services", service);
  const specs: ProcessSpec[] = [];
  const main = path.join(dir, "src", "main.ts");
  const worker = path.join(dir, "src", "worker.ts");
  if (existsSync(main)) specs.push({ name: service, service, entry: main, port });
  if (existsSync(worker)) specs.push({ name: `${service}-worker`, service, entry: worker });
  return specs;
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
  const wanted = (opts.only ?? SERVICES).filter((s) => availableServices().includes(s));
  const children = new Map<string, { child: ChildProcess; tail: OutputTail }>();
  const stopped = new Set<ServiceName>();
  let shuttingDown = false;

  const launch = (spec: ProcessSpec): void => {
    const tail = new OutputTail((line) => opts.onOutput?.(spec.name, line));
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), "--import", "tsx", spec.entry], {
      cwd: repoRoot(),
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    tail.attach(child.stdout);
    tail.attach(child.stderr);
    killOnParentExit(child);
    children.set(spec.name, { child, tail });
    child.once("exit", (code, signal) => {
      if (shuttingDown || stopped.has(spec.service)) return;
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
    const specs = specsOf(service, opts.ports[service]);
    for (const spec of specs) launch(spec);
    await Promise.all(specs.map(waitReady));
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
    processes: () => [...children.keys()],
    async kill(service, signal = "SIGKILL") {
      stopped.add(service);
      const mine = [...children.values()].filter(({ child }) => !hasExited(child) && specsOf(service, 0).some((s) => children.get(s.name)?.child === child));
      for (const { child } of mine) child.kill(signal);
      await Promise.all(mine.map(({ child }) => exited(child)));
    },
    start: startService,
    stop: stopAll,
  };
}
