import path from "node:path";
import type { Deployable } from "@meter/contracts";
import { IMAGES, imageName as meterImageName } from "../../../images/deployables";
import { imageName } from "./images";
import { existsInRepo, isRecord, repoPath } from "./repo";

/** A Meter process as a deployment runs it: the image of one deployable (`meter-text`, infra/images). */
export interface Component {
  deployable: Deployable;
  /** The entry the image's bundle was built from (`services/text/src/main.ts`): its config.ts is beside it. */
  entry: string;
  /**
   * A server (main.ts) answers the API and its health on `<PREFIX>_PORT`; a worker (worker.ts) only
   * its health and metrics, on `<PREFIX>_WORKER_PORT`, and nothing routes to it.
   */
  role: "server" | "worker";
  /** `gateway` -> `GATEWAY`, `media-jobs-worker` -> `MEDIA_JOBS`: the prefix of its service's settings. */
  prefix: string;
  /**
   * `deploy`: the API image of a service with a database, whose migration Job (and compose's `-migrate`)
   * applies its migrations; `wait`: its worker's. Every pod of both waits for the schema; none: no database.
   */
  migrations?: "deploy" | "wait";
}

/** The Meter component an image runs (any registry, any tag), or undefined for a third-party image. */
export function componentOfImage(image: string): Component | undefined {
  const name = path.posix.basename(imageName(image));
  const found = IMAGES.find((i) => meterImageName(i.deployable) === name || i.deployable === name);
  if (!found) return undefined;
  return {
    deployable: found.deployable,
    entry: `${found.dir}/${found.entry}`,
    role: found.entry.endsWith("worker.ts") ? "worker" : "server",
    prefix: found.portSetting.replace(/_(WORKER_)?PORT$/, ""),
    ...(found.migrations ? { migrations: found.migrations } : {}),
  };
}

/** The commands an image runs: its process, and its migration step. */
export const processCommand = (c: Component): string[] => ["node", "--enable-source-maps", `dist/${c.role === "worker" ? "worker" : "main"}.js`];
export const migrationCommand = (c: Component): string[] => ["node", "dist/migrate.js", c.migrations ?? "deploy"];

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

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"]);
const DEFAULT_PORTS: Record<string, number> = {
  "http:": 80,
  "https:": 443,
  "postgresql:": 5432,
  "postgres:": 5432,
  "amqp:": 5672,
  "amqps:": 5671,
  "redis:": 6379,
};
/** Upstream API keys of the text service: free names (the catalog's api_key_env), not config keys. */
const UPSTREAM_KEY = /_API_KEY$/;
/** Settings Node itself reads, not the component's config (prod-ha: the broker's CA). */
const NODE_SETTINGS = new Set(["NODE_EXTRA_CA_CERTS"]);

export interface ParsedComponent {
  problems: string[];
  config?: Record<string, unknown>;
}

/**
 * Parses `env` with the component's own loadConfig. `ownKeys` are the settings given to this
 * component alone (its own ConfigMap and Secret, not the shared ones): each must be one it reads, or
 * it is a typo.
 */
export async function parseComponent(where: string, component: Component, env: Record<string, string>, ownKeys: readonly string[]): Promise<ParsedComponent> {
  const mod = await configModuleOf(component);
  const problems = ownKeys
    .filter((key) => !mod.keys.has(key) && !NODE_SETTINGS.has(key) && !(component.deployable === "text" && UPSTREAM_KEY.test(key)))
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

/** Where a component answers /readyz: its internal port if it has one (the gateway), else its port. */
export function readinessPortOf(component: Component, config: Record<string, unknown>): number | undefined {
  const internal = config[`${component.prefix}_INTERNAL_PORT`];
  return typeof internal === "number" ? internal : portOf(component, config);
}

/** Every address of a parsed config: `*_URL` / `*_ENDPOINT` settings (one URL or a list) and `X_HOST` + `X_PORT` pairs. */
export function addressesOf(config: Record<string, unknown>): { key: string; host: string; port: number | undefined; url?: URL; problem?: string }[] {
  const found: ReturnType<typeof addressesOf> = [];
  for (const [key, value] of Object.entries(config)) {
    if (/_(URL|ENDPOINT)$/.test(key) && key !== "PUBLIC_BASE_URL") {
      for (const one of Array.isArray(value) ? (value as unknown[]) : [value]) {
        if (typeof one !== "string") continue;
        if (!URL.canParse(one)) {
          found.push({ key, host: "", port: undefined, problem: `${key} is not a URL: ${one}` });
          continue;
        }
        const url = new URL(one);
        found.push({ key, host: url.hostname, port: url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol], url });
      }
    }
    const hostKey = /^(.+)_HOST$/.exec(key);
    if (hostKey && typeof value === "string") {
      const port = config[`${hostKey[1]}_PORT`];
      found.push({ key, host: value, port: typeof port === "number" ? port : undefined });
    }
  }
  return found;
}

/**
 * Every address in a parsed config must reach something deployed: a name of the network and a port
 * listening there. A component must listen on every interface (the default 127.0.0.1 is unreachable
 * from other containers and from the kubelet's probes). `external`: names that are outside the
 * deployment (the platform's databases, an object store), not checked.
 */
export function checkAddresses(
  where: string,
  component: Component,
  config: Record<string, unknown>,
  network: Network,
  external: (host: string) => boolean = () => false,
): string[] {
  const problems: string[] = [];
  if (config.HOST !== "0.0.0.0" && config.HOST !== "::")
    problems.push(`${where}: HOST is ${String(config.HOST)}: other containers cannot reach ${component.entry}`);
  for (const a of addressesOf(config)) {
    if (a.problem) {
      problems.push(`${where}: ${a.problem}`);
      continue;
    }
    if (LOOPBACK.has(a.host)) {
      problems.push(`${where}: ${a.key} points at ${a.host}, the container itself`);
      continue;
    }
    if (external(a.host)) continue;
    const ports = network.get(a.host);
    if (!ports) problems.push(`${where}: ${a.key} names host "${a.host}", which nothing deployed answers to`);
    else if (a.port === undefined || !ports.has(a.port))
      problems.push(`${where}: ${a.key} uses port ${String(a.port)}, but ${a.host} listens on ${[...ports].join(", ")}`);
  }
  return problems;
}

/**
 * A service with a database reaches it as two roles: the runtime one (`<PREFIX>_DATABASE_URL`, given to
 * the process) and the migration one (`<PREFIX>_MIGRATION_DATABASE_URL`, given to its migration step
 * alone). Same server, same database, different users: the process must not be able to change the schema.
 */
export function checkDatabaseRoles(where: string, runtimeUrl: string | undefined, migrationUrl: string | undefined): string[] {
  if (!runtimeUrl || !migrationUrl || !URL.canParse(runtimeUrl) || !URL.canParse(migrationUrl)) return [];
  const runtime = new URL(runtimeUrl);
  const migration = new URL(migrationUrl);
  const problems: string[] = [];
  if (runtime.host !== migration.host || runtime.pathname !== migration.pathname)
    problems.push(`${where}: migrates ${migration.host}${migration.pathname} but runs on ${runtime.host}${runtime.pathname}`);
  if (runtime.username === migration.username) problems.push(`${where}: runs as its migration role ${runtime.username}; the runtime role must be another`);
  return problems;
}
