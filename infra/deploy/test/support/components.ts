import path from "node:path";
import { envPrefix, type ServiceName } from "@meter/local-infra";
import { existsInRepo, isRecord, repoPath } from "./repo";

/** A Meter process as a deployment starts it: `node --import tsx <entry>`. */
export interface Component {
  entry: string;
  /**
   * A server (main.ts) answers the API and its health on `<PREFIX>_PORT`; a worker (worker.ts) only
   * its health and metrics, on `<PREFIX>_WORKER_PORT`, and nothing routes to it.
   */
  role: "server" | "worker";
  /** `gateway` -> `GATEWAY`, `services/billing-ledger` -> `BILLING_LEDGER`: the prefix of its own settings. */
  prefix: string;
}

/** The migrations (`pnpm db deploy`, packages/db-tools): reads `<SERVICE>_DATABASE_URL`. */
export const MIGRATE_COMMAND = ["pnpm", "db", "deploy"] as const;

const NODE_COMMAND = ["node", "--import", "tsx"] as const;

/** The component a container command starts, or undefined when it runs something else. */
export function componentOf(command: readonly string[] | undefined): Component | undefined {
  if (!command || command.length !== NODE_COMMAND.length + 1) return undefined;
  if (!NODE_COMMAND.every((word, i) => command[i] === word)) return undefined;
  const entry = command[NODE_COMMAND.length]!;
  const dir = path.posix.dirname(path.posix.dirname(entry));
  return {
    entry,
    role: path.posix.basename(entry) === "worker.ts" ? "worker" : "server",
    prefix: envPrefix(path.posix.basename(dir) as ServiceName),
  };
}

export const isMigrateCommand = (command: readonly string[] | undefined): boolean =>
  command !== undefined && command.join(" ") === MIGRATE_COMMAND.join(" ");

interface ConfigModule {
  loadConfig(env: NodeJS.ProcessEnv): Record<string, unknown>;
  /** Every setting the component's schema knows. */
  keys: ReadonlySet<string>;
}

/**
 * The component's own config module (`<dir>/src/config.ts`, STYLE.md): its `loadConfig` and the keys
 * of the zod object it exports. Parsing with the real module is what makes these checks worth
 * anything: a missing or malformed setting fails here exactly as the process would fail at start.
 */
export async function configModuleOf(component: Component): Promise<ConfigModule> {
  const relative = path.posix.join(path.posix.dirname(component.entry), "config.ts");
  if (!existsInRepo(relative)) throw new Error(`${component.entry}: no ${relative} next to it`);
  const mod = (await import(repoPath(relative))) as Record<string, unknown>;
  if (typeof mod.loadConfig !== "function") throw new Error(`${relative} exports no loadConfig`);
  const schema = Object.values(mod).find((value) => isRecord(value) && isRecord(value.shape));
  if (!schema) throw new Error(`${relative} exports no zod object schema`);
  const load = mod.loadConfig as (env: NodeJS.ProcessEnv) => unknown;
  return {
    loadConfig: (env) => load(env) as Record<string, unknown>,
    keys: new Set(Object.keys((schema as { shape: object }).shape)),
  };
}

/** Names something on the deployment's network answers to, and the ports it listens on there. */
export type Network = ReadonlyMap<string, ReadonlySet<number>>;

/** Components that do not exist yet: the gateway's URL for them may stay on its loopback default. */
const NOT_BUILT_YET = new Set(["media-jobs", "mcp"]);
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"]);
const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443, "postgresql:": 5432, "postgres:": 5432, "amqp:": 5672, "amqps:": 5671 };
/** Upstream API keys of the text service: free names (the catalog's api_key_env), not config keys. */
const UPSTREAM_KEY = /_API_KEY$/;

export interface ParsedComponent {
  problems: string[];
  config?: Record<string, unknown>;
}

/**
 * Parses `env` with the component's own loadConfig. `ownKeys` are the settings given to this
 * component alone (not a shared ConfigMap): each must be one it reads, or it is a typo.
 */
export async function parseComponent(where: string, component: Component, env: Record<string, string>, ownKeys: readonly string[]): Promise<ParsedComponent> {
  const mod = await configModuleOf(component);
  const problems = ownKeys
    .filter((key) => !mod.keys.has(key) && !UPSTREAM_KEY.test(key))
    .map((key) => `${where}: sets ${key}, which ${component.entry} does not read`);
  try {
    return { problems, config: mod.loadConfig({ ...env }) };
  } catch (error) {
    return { problems: [...problems, `${where}: ${component.entry} would not start: ${error instanceof Error ? error.message : String(error)}`] };
  }
}

/** The HTTP port a component listens on, from its parsed config. */
export function portOf(component: Component, config: Record<string, unknown>): number | undefined {
  const port = config[component.role === "worker" ? `${component.prefix}_WORKER_PORT` : `${component.prefix}_PORT`];
  return typeof port === "number" ? port : undefined;
}

/**
 * Every address in a parsed config must reach something deployed: `*_URL` / `*_ENDPOINT` settings
 * and `X_HOST` + `X_PORT` pairs, on a name of the network and a port listening there. A component must
 * listen on every interface (the default 127.0.0.1 is unreachable from other containers and probes).
 */
export function checkAddresses(where: string, component: Component, config: Record<string, unknown>, network: Network): string[] {
  const problems: string[] = [];
  // Workers too: the kubelet probes them on the pod's address.
  if (config.HOST !== "0.0.0.0" && config.HOST !== "::") {
    problems.push(`${where}: HOST is ${String(config.HOST)}: other containers cannot reach ${component.entry}`);
  }
  const reach = (key: string, host: string, port: number | undefined, peer?: string) => {
    if (LOOPBACK.has(host)) {
      if (peer && NOT_BUILT_YET.has(peer) && !network.has(peer)) return;
      problems.push(`${where}: ${key} points at ${host}, the container itself`);
      return;
    }
    if (peer && network.has(peer) && host !== peer) problems.push(`${where}: ${key} names ${host}, but ${peer} is deployed as "${peer}"`);
    const ports = network.get(host);
    if (!ports) problems.push(`${where}: ${key} names host "${host}", which nothing deployed answers to`);
    else if (port === undefined || !ports.has(port)) problems.push(`${where}: ${key} uses port ${String(port)}, but ${host} listens on ${[...ports].join(", ")}`);
  };
  for (const [key, value] of Object.entries(config)) {
    if (typeof value !== "string") continue;
    if (/_(URL|ENDPOINT)$/.test(key) && key !== "PUBLIC_BASE_URL") {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        problems.push(`${where}: ${key} is not a URL: ${value}`);
        continue;
      }
      const peer = key.endsWith("_URL") ? key.slice(0, -"_URL".length).toLowerCase().replace(/_/g, "-") : undefined;
      reach(key, url.hostname, url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol], peer);
    }
    const hostKey = /^(.+)_HOST$/.exec(key);
    if (hostKey) {
      const port = config[`${hostKey[1]}_PORT`];
      reach(key, value, typeof port === "number" ? port : undefined);
    }
  }
  return problems;
}

/** The environment of what answers on each name of the network (PostgreSQL, RabbitMQ, MinIO containers). */
export type PeerEnvironments = ReadonlyMap<string, Readonly<Record<string, string>>>;

/** Who a server's own environment says may log in (the images' documented variables and defaults). */
const LOGINS: { protocol: string; user: string; defaultUser: string; password: string }[] = [
  { protocol: "postgresql:", user: "POSTGRES_USER", defaultUser: "postgres", password: "POSTGRES_PASSWORD" },
  { protocol: "amqp:", user: "RABBITMQ_DEFAULT_USER", defaultUser: "guest", password: "RABBITMQ_DEFAULT_PASS" },
];

/**
 * The credentials a component uses must be the ones the server it talks to was started with, when
 * that server is deployed by the same files: database and broker URLs, and the object store keys
 * (MinIO's root credentials).
 */
export function checkCredentials(where: string, config: Record<string, unknown>, peers: PeerEnvironments): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    if (typeof value !== "string" || !/_URL$/.test(key)) continue;
    const url = URL.canParse(value) ? new URL(value) : undefined;
    const login = LOGINS.find((l) => l.protocol === url?.protocol);
    const peer = url && peers.get(url.hostname);
    if (!login || !peer) continue;
    const user = peer[login.user] ?? login.defaultUser;
    if (decodeURIComponent(url.username) !== user || decodeURIComponent(url.password) !== (peer[login.password] ?? "")) {
      problems.push(`${where}: ${key} logs in with other credentials than ${url.hostname} is started with`);
    }
  }
  const store = typeof config.OBJECT_STORE_ENDPOINT === "string" && URL.canParse(config.OBJECT_STORE_ENDPOINT) ? new URL(config.OBJECT_STORE_ENDPOINT) : undefined;
  const minio = store && peers.get(store.hostname);
  if (minio && (minio.MINIO_ROOT_USER !== config.OBJECT_STORE_ACCESS_KEY || minio.MINIO_ROOT_PASSWORD !== config.OBJECT_STORE_SECRET_KEY)) {
    problems.push(`${where}: OBJECT_STORE_ACCESS_KEY / OBJECT_STORE_SECRET_KEY are not ${store.hostname}'s root credentials`);
  }
  return problems;
}
