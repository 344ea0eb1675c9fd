import { z } from "zod";
import { CommonConfig, env, parseConfig } from "@meter/config";

export const TextConfig = CommonConfig.extend({
  TEXT_PORT: env.port(8081),
  TEXT_DATABASE_URL: env.url("postgresql://postgres@127.0.0.1:5432/meter_text"),
  BILLING_LEDGER_URL: env.url("http://127.0.0.1:8084"),
  RABBITMQ_URL: env.string("amqp://guest:guest@127.0.0.1:5672"),
  /** How long a request waits for its upstream before answering 202 (the work goes on). */
  TEXT_SYNC_TIMEOUT_MS: env.int(60_000, { min: 1 }),
  /** The longest one upstream call may take before its outcome counts as unknown. */
  UPSTREAM_TIMEOUT_MS: env.int(600_000, { min: 1000 }),
  /** Output budget when a /v1/responses request gives no max_output_tokens (and for quotes without max_tokens). */
  DEFAULT_MAX_OUTPUT_TOKENS: env.int(1024, { min: 1 }),
  /** How often the tariff catalog is reloaded from billing; a change applies within this (plus one request). */
  CATALOG_REFRESH_MS: env.int(2000, { min: 100, max: 4000 }),
  /** How often the reconciler looks for requests a crash or an outage left unfinished. */
  RECONCILE_INTERVAL_MS: env.int(1000, { min: 50 }),
  /** A text process silent for this long is taken for dead; another takes over its unfinished requests. */
  WORKER_STALE_MS: env.int(15_000, { min: 500 }),
  /** Idempotency records (and their stored answers) are kept at least this long. */
  IDEMPOTENCY_RETENTION_HOURS: env.int(48, { min: 24 }),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
});
export type TextConfig = z.infer<typeof TextConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): TextConfig {
  return parseConfig(TextConfig, source);
}
