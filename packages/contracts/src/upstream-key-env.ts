import { DEPLOYABLES, envPrefix } from "./services";

/** Default of UPSTREAM_KEY_ENV_PATTERN: the environment variables an upstream's API key may be read from. */
export const DEFAULT_UPSTREAM_KEY_ENV_PATTERN = "^[A-Z][A-Z0-9_]*_API_KEY$";

/**
 * The settings of this system and of what runs beside it, by family: never an upstream key, whatever
 * UPSTREAM_KEY_ENV_PATTERN admits, or a catalog entry could have a secret sent as a bearer to any
 * `base_url`. Every setting a service reads is in one of them (each service's config test checks its own).
 */
const PREFIXES = [
  // Each deployable's own settings (TEXT_*, BILLING_LEDGER_*, GATEWAY_*, ..., their *_BROKER_PASSWORD among them).
  ...DEPLOYABLES.map((d) => `${envPrefix(d)}_`),
  // Shared settings and secrets: internal and grant keys, the admin token, the broker, PostgreSQL, Redis, the object store, clamd.
  "INTERNAL_",
  "GRANT_",
  "ADMIN_",
  "RABBITMQ_",
  "POSTGRES_",
  "PG",
  "DATABASE_",
  "REDIS_",
  "OBJECT_STORE_",
  "MINIO_",
  "CLAMD_",
  "NODE_",
  "NPM_",
  // Namespaces of the services' own settings.
  "ALLOWANCE",
  "BODY_",
  "BOOKS_",
  "BUDGET_",
  "BUS_",
  "CABINET_",
  "HOLD_",
  "REFUSAL_LOG_",
  "REQUEST_LOG_",
  "UPLOAD_",
  "VERIFY_",
  "WEBHOOK_",
];
const SUFFIXES = ["_URL", "_SECRET", "_SECRET_KEY", "_SIGNING_KEY", "_ACCESS_KEY", "_PASSWORD", "_TOKEN"];
const CONTAINING = ["DATABASE_URL"];
/** The services' settings outside those families, by name. */
const NAMES = new Set([
  "HOST",
  "LOG_LEVEL",
  "CATALOG_REFRESH_MS",
  "COMPLETE_WAIT_MS",
  "DEFAULT_MAX_OUTPUT_TOKENS",
  "FILE_QUOTA_BYTES",
  "IDEMPOTENCY_RETENTION_HOURS",
  "JSON_BODY_LIMIT_BYTES",
  "KEY_CACHE_TTL_MS",
  "KEY_EXPIRY_SWEEP_INTERVAL_MS",
  "KEY_MAX_IN_FLIGHT",
  "MAX_FILE_BYTES",
  "MAX_IMAGE_PIXELS",
  "MEDIA_ENABLED",
  "METER_TIMINGS_DIR",
  "MODELS_CACHE_TTL_MS",
  "RATE_LIMIT_PER_MINUTE",
  "RECONCILE_INTERVAL_MS",
  "SERVICE_MAX_IN_FLIGHT",
  "SHUTDOWN_DELAY_MS",
  "SWEEP_INTERVAL_MS",
  "TRUST_PROXY",
  "UPSTREAM_KEY_ENV_PATTERN",
  "UPSTREAM_TIMEOUT_MS",
  "WORKER_STALE_MS",
]);

/**
 * The one rule for which environment variable may be read as an upstream's API key: where the catalog
 * is edited (billing-ledger refuses a `provider.api_key_env` it refuses) and where keys are read (text,
 * and any service calling upstream providers, reads no other). The name must match `pattern`
 * (UPSTREAM_KEY_ENV_PATTERN) and be no setting of this system. Returns why a name is refused, or
 * undefined when it may be read.
 */
export function upstreamKeyEnvRefusal(name: string, pattern: RegExp): string | undefined {
  if (!pattern.test(name)) return `"${name}" does not match UPSTREAM_KEY_ENV_PATTERN ${pattern.source}`;
  const upper = name.toUpperCase();
  const prefix = PREFIXES.find((p) => upper.startsWith(p));
  const suffix = SUFFIXES.find((s) => upper.endsWith(s));
  const containing = CONTAINING.find((c) => upper.includes(c));
  const rule = prefix ? `${prefix}*` : suffix ? `*${suffix}` : containing ? `*${containing}*` : NAMES.has(upper) ? upper : undefined;
  return rule ? `"${name}" is one of this system's own settings (${rule}), never an upstream key` : undefined;
}
