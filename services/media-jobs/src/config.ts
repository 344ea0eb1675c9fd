import os from "node:os";
import type { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN } from "@meter/contracts";
import type { RetryPolicy } from "@meter/messaging";
import { routingSettings, upstreamKeysFrom, type UpstreamKeys } from "@meter/upstreams";

const MiB = 1024 * 1024;

/** One set of settings for both deployables: the API process (main.ts) and the worker (worker.ts). */
export const MediaJobsConfig = CommonConfig.extend({
  MEDIA_JOBS_PORT: serviceEnv.port("media-jobs"),
  /** The worker's own /healthz, /readyz and /metrics (0: any free port, as the local runner and tests use). */
  MEDIA_JOBS_WORKER_PORT: env.port(8092),
  MEDIA_JOBS_DATABASE_URL: serviceEnv.databaseUrl("media-jobs"),
  BILLING_LEDGER_URL: serviceEnv.url("billing-ledger"),
  FILES_URL: serviceEnv.url("files"),
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
  /** How often the tariff catalog is reloaded from billing (a change is also announced at once on the bus). */
  CATALOG_REFRESH_MS: env.int(2000, { min: 100, max: 4000 }),
  /** Jobs one worker process runs at once (and messages it takes from the queue). Default: its cores. */
  MEDIA_JOBS_CONCURRENCY: env.int(os.availableParallelism(), { min: 1, max: 64 }),
  /** Tesseract processes of one worker, shared by its OCR jobs. Default: its cores. */
  MEDIA_JOBS_OCR_PROCESSES: env.int(os.availableParallelism(), { min: 1, max: 64 }),
  /** Runs a job may start (a worker dying mid-job costs one) before it fails and its hold is released. */
  MEDIA_JOBS_MAX_ATTEMPTS: env.int(3, { min: 1, max: 20 }),
  /** A running job's lease, renewed every third of it while it runs; a dead worker's job is taken up after it. */
  MEDIA_JOBS_LEASE_MS: env.int(30_000, { min: 1_000 }),
  /** A running job whose engine reports no progress (a page, an image, a step) for this long fails, its hold released. */
  MEDIA_JOBS_STALL_TIMEOUT_MS: env.int(300_000, { min: 100 }),
  /** A queued job that no worker has taken this long has its message sent again (a lost or dead-lettered one). */
  MEDIA_JOBS_REQUEUE_AFTER_MS: env.int(300_000, { min: 1_000 }),
  /** Deliveries of one job message whose handling failed (database or broker trouble) before it is dead-lettered. */
  MEDIA_JOBS_RETRY_MAX_ATTEMPTS: env.int(5, { min: 1 }),
  MEDIA_JOBS_RETRY_BACKOFF_MS: env.intList([1_000, 5_000, 30_000], { min: 1, minItems: 1 }),
  /** Bytes of input files one job may take in all (each file is also bounded by the files service). */
  MEDIA_JOBS_MAX_INPUT_BYTES: env.int(100 * MiB, { min: 1 }),
  /** How often the reconciler looks for jobs a crash or an outage left behind. */
  RECONCILE_INTERVAL_MS: env.int(1000, { min: 50 }),
  /** Finished jobs (and their idempotency keys) are kept this long, then purged. */
  MEDIA_JOBS_RETENTION_DAYS: env.int(30, { min: 1 }),
  /** The longest one upstream call of a job may take (an image edit takes up to a minute or two); then it fails upstream_timeout. */
  MEDIA_JOBS_UPSTREAM_TIMEOUT_MS: env.int(300_000, { min: 1000 }),
  /** MEDIA_JOBS_UPSTREAM_RETRY_DELAYS_MS, MEDIA_JOBS_PROVIDER_FAILURES_TO_OPEN, MEDIA_JOBS_PROVIDER_COOLDOWN_MS: as text's, for media models. */
  ...routingSettings("MEDIA_JOBS"),
  /** The names a catalog entry's `api_key_env` may give: only these variables are ever sent upstream. */
  UPSTREAM_KEY_ENV_PATTERN: env.string(DEFAULT_UPSTREAM_KEY_ENV_PATTERN),
});
export type MediaJobsConfig = z.infer<typeof MediaJobsConfig> & { upstreamKeys: UpstreamKeys };

/** The settings, and the upstream API keys (the rule of @meter/upstreams' upstreamKeysFrom), read once. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): MediaJobsConfig {
  const config = parseConfig(MediaJobsConfig, source);
  return { ...config, upstreamKeys: upstreamKeysFrom(source, config.UPSTREAM_KEY_ENV_PATTERN, Object.keys(MediaJobsConfig.shape)) };
}

export function jobRetryOf(config: MediaJobsConfig): RetryPolicy {
  return { maxAttempts: config.MEDIA_JOBS_RETRY_MAX_ATTEMPTS, backoffMs: config.MEDIA_JOBS_RETRY_BACKOFF_MS };
}
