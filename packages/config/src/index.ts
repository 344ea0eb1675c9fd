import { z } from "zod";
import { defaultDatabaseName, ServiceCatalog, type ServiceName } from "@meter/contracts";
import { productionSecretProblems, secretSettings, TOKEN_MIN_LENGTH, type SecretMeta } from "./secrets";

export { PASSWORD_MIN_LENGTH, secretProblem, TOKEN_MIN_LENGTH } from "./secrets";

/**
 * Thrown when the environment does not satisfy a service's config schema.
 * The message names every bad key at once, so one restart fixes them all.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment with a service's schema. In production (NODE_ENV=production) it also refuses
 * placeholders and weak secrets (./secrets.ts), so a copied example never starts with a known token.
 */
export function parseConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) {
    const data = result.data as Record<string, unknown>;
    const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
    if (data.NODE_ENV === "production" && shape !== undefined) {
      const problems = productionSecretProblems(shape, env, data);
      if (problems.length > 0) throw new ConfigError(problems);
    }
    return result.data;
  }
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.join(".") || "(root)";
    return `${key}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/** Environment variables are strings; these helpers turn them into typed values. */
export const env = {
  string: (fallback?: string) => (fallback === undefined ? z.string().min(1) : z.string().min(1).default(fallback)),
  optionalString: () => z.string().min(1).optional(),
  int: (fallback?: number, opts: { min?: number; max?: number } = {}) => {
    let inner = z.coerce.number().int();
    if (opts.min !== undefined) inner = inner.min(opts.min);
    if (opts.max !== undefined) inner = inner.max(opts.max);
    return fallback === undefined ? inner : z.preprocess(emptyToUndefined, inner.default(fallback));
  },
  /** Comma-separated whole numbers (`250,1000`: waits in milliseconds), each within min/max. */
  intList: (fallback: number[], opts: { min?: number; max?: number; minItems?: number; maxItems?: number } = {}) => {
    let item = z.number().int();
    if (opts.min !== undefined) item = item.min(opts.min);
    if (opts.max !== undefined) item = item.max(opts.max);
    let list = z.array(item);
    if (opts.minItems !== undefined) list = list.min(opts.minItems);
    if (opts.maxItems !== undefined) list = list.max(opts.maxItems);
    return z.preprocess((v) => (typeof v === "string" && v.trim() !== "" ? v.split(",").map((x) => Number(x.trim())) : undefined), list.default(fallback));
  },
  port: (fallback: number) => z.preprocess(emptyToUndefined, z.coerce.number().int().min(0).max(65535).default(fallback)),
  bool: (fallback: boolean) =>
    z.preprocess(
      emptyToUndefined,
      z
        .enum(["true", "false", "1", "0", "yes", "no"])
        .default(fallback ? "true" : "false")
        .transform((v) => v === "true" || v === "1" || v === "yes"),
    ),
  url: (fallback?: string) => (fallback === undefined ? z.url() : z.preprocess(emptyToUndefined, z.url().default(fallback))),
  optionalUrl: () => z.preprocess(emptyToUndefined, z.url().optional()),
  /** One URL, or several separated by commas (replicas reached without a load balancer in front). */
  urlList: (fallback: string) =>
    z
      .preprocess(emptyToUndefined, z.string().default(fallback))
      .transform((v) =>
        v
          .split(",")
          .map((u) => u.trim())
          .filter((u) => u !== ""),
      )
      .pipe(z.array(z.url()).min(1)),
  /**
   * A token we generate (ADMIN_TOKEN): at least `min` characters anywhere; in production also at least
   * 32 random characters of the base64 or hex alphabet (see ./secrets.ts).
   */
  token: (min = TOKEN_MIN_LENGTH) => secret(z.string().min(min, `must be at least ${min} characters`), { kind: "token" }),
  optionalToken: (min = TOKEN_MIN_LENGTH) => secret(z.preprocess(emptyToUndefined, z.string().min(min).optional()), { kind: "token" }),
  /** A password given to another system; `endpointKey` names where, so a loopback one is not measured. */
  password: (fallback: string, endpointKey?: string) => secret(env.string(fallback), { kind: "password", endpointKey }),
  /** A URL that may carry a password (RABBITMQ_URL): in production that password must be strong. */
  secretUrl: (fallback: string) => secret(env.string(fallback), { kind: "url" }),
  enumOf: <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
    z.preprocess(emptyToUndefined, z.enum(values).default(fallback as never)),
};

/**
 * A service's own port, where it is reached, and its database, each defaulting to the local values
 * of the one service list (packages/contracts/src/services.ts).
 */
export const serviceEnv = {
  port: (service: ServiceName) => env.port(ServiceCatalog[service].port),
  url: (service: ServiceName) => env.url(localUrl(service)),
  /** Several endpoints of one service, comma-separated (tried in turn; see the gateway's TEXT_URL). */
  urlList: (service: ServiceName) => env.urlList(localUrl(service)),
  databaseUrl: (service: ServiceName) => secret(env.url(`postgresql://postgres@127.0.0.1:5432/${defaultDatabaseName(service)}`), { kind: "url" }),
};

function localUrl(service: ServiceName): string {
  return `http://127.0.0.1:${ServiceCatalog[service].port}`;
}

function secret<S extends z.ZodType>(schema: S, meta: SecretMeta): S {
  secretSettings.add(schema, meta);
  return schema;
}

function emptyToUndefined(v: unknown): unknown {
  return v === "" ? undefined : v;
}

/** Settings every service shares. Each service extends this with its own keys. */
export const CommonConfig = z.object({
  NODE_ENV: env.enumOf(["development", "test", "production"] as const, "development"),
  LOG_LEVEL: env.enumOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const, "info"),
  /** This process's own Ed25519 key for signing internal calls, `<kid>.<base64url PKCS#8 DER>` (a secret). */
  INTERNAL_SIGNING_KEY: z.string().min(40, "must be <kid>.<base64url PKCS#8 DER> (generate with `pnpm internal-keys`)"),
  /** Every deployable's public keys, `<deployable>:<kid>.<base64url SPKI DER>, ...` (not a secret; shared by all). */
  INTERNAL_PUBLIC_KEYS: z.string().min(40, "must list <deployable>:<kid>.<base64url SPKI DER> entries (generate with `pnpm internal-keys`)"),
  /**
   * What this process signs its internal calls with: `ed25519` (what release 1.0.0 verifies; the default
   * while any deployable may still run it) or `mac` (docs/deploy.md, Upgrading).
   */
  INTERNAL_AUTH_SIGN: env.enumOf(["ed25519", "mac"] as const, "ed25519"),
  /** What it believes: `both` schemes, or `mac-only` once every caller signs MACs. */
  INTERNAL_AUTH_ACCEPT: env.enumOf(["both", "mac-only"] as const, "both"),
  /**
   * How bus commands this process publishes are sealed: `ed25519` (what every release believes; the
   * default while a consumer may run 1.1.0) or `mac`, a MAC for the command's one consumer
   * (docs/deploy.md, Upgrading). Events are always Ed25519-signed.
   */
  BUS_COMMAND_SIGN: env.enumOf(["ed25519", "mac"] as const, "ed25519"),
  HOST: env.string("127.0.0.1"),
  /**
   * On SIGTERM, how long a server keeps serving after /readyz turns 503 (its answers closing their
   * connections) before it stops accepting: the time the load balancer needs to stop routing to it.
   */
  SHUTDOWN_DELAY_MS: env.int(0, { min: 0, max: 120_000 }),
});
export type CommonConfig = z.infer<typeof CommonConfig>;

/**
 * The settings of a service's `dist/migrate.js` (the release's migration Job, and the wait of its pods):
 * its owner role's and runtime role's URLs, judged in production like the service's own settings, so a
 * Job given a placeholder or weak owner password fails before it connects, as its Deployment would.
 */
export function migrationConfig(prefix: string) {
  const url = () => secret(env.optionalUrl(), { kind: "url" });
  return z.object({
    NODE_ENV: CommonConfig.shape.NODE_ENV,
    [`${prefix}_MIGRATION_DATABASE_URL`]: url(),
    [`${prefix}_DATABASE_URL`]: url(),
  });
}
