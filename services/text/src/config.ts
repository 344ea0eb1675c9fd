import type { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN } from "@meter/contracts";
import { routingSettings, upstreamKeysFrom, type UpstreamKeys } from "@meter/upstreams";

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
  /** TEXT_UPSTREAM_RETRY_DELAYS_MS, TEXT_PROVIDER_FAILURES_TO_OPEN, TEXT_PROVIDER_COOLDOWN_MS. */
  ...routingSettings("TEXT"),
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
  /** The names a catalog entry's `api_key_env` may give: only these variables (none of this system's settings) are ever sent upstream. */
  UPSTREAM_KEY_ENV_PATTERN: env.string(DEFAULT_UPSTREAM_KEY_ENV_PATTERN),
});
export type TextConfig = z.infer<typeof TextConfig> & { upstreamKeys: UpstreamKeys };

/**
 * The settings, and the upstream API keys, read here once: the environment variables the rule billing's
 * catalog applies to `api_key_env` admits (upstreamKeyEnvRefusal: names matching UPSTREAM_KEY_ENV_PATTERN
 * that are none of this system's settings).
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): TextConfig {
  const config = parseConfig(TextConfig, source);
  return { ...config, upstreamKeys: upstreamKeysFrom(source, config.UPSTREAM_KEY_ENV_PATTERN, Object.keys(TextConfig.shape)) };
}
