import { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import type { UpstreamKeys } from "./providers/provider";

export const TextConfig = CommonConfig.extend({
  TEXT_PORT: serviceEnv.port("text"),
  TEXT_DATABASE_URL: serviceEnv.databaseUrl("text"),
  BILLING_LEDGER_URL: serviceEnv.url("billing-ledger"),
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  /** How long a request waits for its upstream before answering 202 (the work goes on). */
  TEXT_SYNC_TIMEOUT_MS: env.int(60_000, { min: 1 }),
  /** The longest one upstream call may take before its outcome counts as unknown. */
  UPSTREAM_TIMEOUT_MS: env.int(600_000, { min: 1000 }),
  /** Attempts a request may start (each calls the upstream at most once) before it fails and its hold is released. */
  TEXT_MAX_ATTEMPTS: env.int(10, { min: 1, max: 100 }),
  /** First back-off of a request whose attempt did not finish; it doubles per attempt (capped). */
  TEXT_PARK_BASE_MS: env.int(1_000, { min: 10 }),
  /** Waits between the inline retries of an upstream answering 5xx/429 within one attempt (nothing was charged). */
  TEXT_UPSTREAM_RETRY_DELAYS_MS: z.preprocess(
    (v) => (typeof v === "string" && v.trim() !== "" ? v.split(",").map((x) => Number(x.trim())) : undefined),
    z.array(z.number().int().min(0).max(60_000)).max(5).default([250, 1000]),
  ),
  /** Consecutive failures (refusals, no answer) after which a provider of a several-provider model is cooled down. */
  TEXT_PROVIDER_FAILURES_TO_OPEN: env.int(3, { min: 1, max: 100 }),
  /** How long a cooled-down provider is passed over before one trial call (its Retry-After, when longer, wins). */
  TEXT_PROVIDER_COOLDOWN_MS: env.int(30_000, { min: 100 }),
  /** A request left by an attempt that could not even park it is taken up again after this. */
  TEXT_RECORD_LEASE_MS: env.int(30_000, { min: 1_000 }),
  /** Output budget when a /v1/responses request gives no max_output_tokens (and for quotes without max_tokens). */
  DEFAULT_MAX_OUTPUT_TOKENS: env.int(1024, { min: 1 }),
  /** How often the tariff catalog is reloaded from billing (a change is also announced at once on the bus). */
  CATALOG_REFRESH_MS: env.int(2000, { min: 100, max: 4000 }),
  /** How often the reconciler looks for requests a crash or an outage left unfinished. */
  RECONCILE_INTERVAL_MS: env.int(1000, { min: 50 }),
  /** A text process silent for this long is taken for dead; another takes over its unfinished requests. */
  WORKER_STALE_MS: env.int(15_000, { min: 500 }),
  /** Idempotency records (and their stored answers) are kept at least this long. */
  IDEMPOTENCY_RETENTION_HOURS: env.int(48, { min: 24 }),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
  /** Requests' holds placed here against allowances billing grants ahead (docs/api.md, "Allowances"); `off`: one billing hold per request. */
  ALLOWANCES: env.enumOf(["on", "off"], "on"),
  /** An allowance is sized for this many seconds of its key's recent spend. */
  ALLOWANCE_SECONDS: env.int(2, { min: 1, max: 60 }),
  /** ...and at least this many requests of the current estimate; billing grants none smaller (near a limit: per-request holds). */
  ALLOWANCE_MIN_REQUESTS: env.int(4, { min: 1, max: 1000 }),
  /** An allowance no request used for this long is returned (bounds how long parked money can refuse another process's request). */
  ALLOWANCE_IDLE_MS: env.int(2_000, { min: 100, max: 60_000 }),
  /** After billing refused a key an allowance, none is asked for it for this long. */
  ALLOWANCE_REFUSED_BACKOFF_MS: env.int(5_000, { min: 100 }),
  /** The names a catalog entry's `api_key_env` may give: only these variables are ever sent upstream. */
  UPSTREAM_KEY_ENV_PATTERN: env.string("^[A-Z][A-Z0-9_]*_API_KEY$"),
});
export type TextConfig = z.infer<typeof TextConfig> & { upstreamKeys: UpstreamKeys };

/**
 * The settings, and the upstream API keys: the environment variables whose names match
 * UPSTREAM_KEY_ENV_PATTERN and are none of this service's own settings, read here once.
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): TextConfig {
  const config = parseConfig(TextConfig, source);
  let pattern: RegExp;
  try {
    pattern = new RegExp(config.UPSTREAM_KEY_ENV_PATTERN);
  } catch (e) {
    throw new Error(`UPSTREAM_KEY_ENV_PATTERN is not a regular expression: ${(e as Error).message}`);
  }
  const own = new Set(Object.keys(TextConfig.shape));
  const keys = new Map(
    Object.entries(source).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "" && pattern.test(entry[0]) && !own.has(entry[0]),
    ),
  );
  return { ...config, upstreamKeys: { get: (name) => keys.get(name) } };
}
