import { createHmac } from "node:crypto";
import type { z } from "zod";
import { CommonConfig, env, parseConfig, serviceEnv } from "@meter/config";
import { ServiceCatalog } from "@meter/contracts";
import type { RetryPolicy } from "@meter/messaging";
import type { S3ObjectStoreOptions } from "./adapters/s3-object-store";
import { DEFAULT_POLICY, type FilesPolicy } from "./domain/policy";

const MiB = 1024 * 1024;

export const FilesConfig = CommonConfig.extend({
  FILES_PORT: serviceEnv.port("files"),
  /** The worker's own /healthz, /readyz and /metrics (0: any free port, as the local runner and tests use). */
  FILES_WORKER_PORT: env.port(8093),
  FILES_DATABASE_URL: serviceEnv.databaseUrl("files"),
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
  /**
   * Where clients reach the API (the gateway): the origin of every upload link. Required in production
   * (loadApiConfig); a request's Host or X-Forwarded-Host is the client's to choose, so it never decides.
   */
  PUBLIC_BASE_URL: env.optionalUrl(),
  /** Outside production, with PUBLIC_BASE_URL unset, links point at the local gateway (npm start and the tests set this). */
  GATEWAY_URL: env.optionalUrl(),
  /**
   * Signs upload links. Unset: derived from INTERNAL_SIGNING_KEY (the files service's own key), so
   * links survive restarts and agree across replicas; rotating that key then voids the links of the
   * last 300 s.
   */
  FILES_UPLOAD_SECRET: env.optionalToken(),
  MAX_FILE_BYTES: env.int(50 * MiB, { min: 1 }),
  /** Per user, across organizations (docs/api.md "Files"). */
  FILE_QUOTA_BYTES: env.int(10_000_000_000, { min: 1 }),
  /** How long POST /v1/files/{id}/complete waits for the verdict before answering 202. */
  COMPLETE_WAIT_MS: env.int(5_000, { min: 0, max: 60_000 }),
  OBJECT_STORE_ENDPOINT: env.url("http://127.0.0.1:9000"),
  OBJECT_STORE_ACCESS_KEY: env.string("S3RVER"),
  OBJECT_STORE_SECRET_KEY: env.password("S3RVER", "OBJECT_STORE_ENDPOINT"),
  OBJECT_STORE_REGION: env.string("us-east-1"),
  FILES_BUCKET: env.string("meter-files"),
  CLAMD_HOST: env.string("127.0.0.1"),
  CLAMD_PORT: env.port(3310),
  CLAMD_TIMEOUT_MS: env.int(60_000, { min: 1_000 }),
  /** clamd's StreamMaxLength: a larger file could never be scanned, so it may not be accepted at all. */
  CLAMD_STREAM_MAX_BYTES: env.int(50 * MiB, { min: 1 }),
  /**
   * An image (PNG, JPEG, WebP) whose header says more pixels than this is rejected `image_too_large`
   * before the scan: decoding it costs 4 bytes a pixel. The media models accept no larger input.
   */
  MAX_IMAGE_PIXELS: env.int(100_000_000, { min: 1 }),
  /** Files verified at once by one worker process. */
  VERIFY_CONCURRENCY: env.int(4, { min: 1, max: 64 }),
  /** While clamd or the object store is down: attempts per message, and the waits between them (the last repeats). */
  VERIFY_RETRY_MAX_ATTEMPTS: env.int(10, { min: 1 }),
  VERIFY_RETRY_BACKOFF_MS: env.intList([1_000, 5_000, 15_000, 30_000, 60_000], { min: 1, minItems: 1 }),
  SWEEP_INTERVAL_MS: env.int(60_000, { min: 100 }),
  /** A file still `verifying` this long after its last request is sent to the worker again. */
  VERIFY_REQUEUE_AFTER_MS: env.int(15 * 60_000, { min: 1_000 }),
  /** A streaming PUT renews its claim every third of this; a claim not renewed this long is its dead process's. */
  UPLOAD_LEASE_MS: env.int(30_000, { min: 1_000 }),
  /** A PUT whose body stalls this long is stopped (the link can be used again at once). */
  UPLOAD_IDLE_TIMEOUT_MS: env.int(60_000, { min: 1_000 }),
}).refine((c) => c.MAX_FILE_BYTES <= c.CLAMD_STREAM_MAX_BYTES, {
  message: "MAX_FILE_BYTES must not exceed CLAMD_STREAM_MAX_BYTES: clamd could not scan such a file",
  path: ["MAX_FILE_BYTES"],
});
export type FilesConfig = z.infer<typeof FilesConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): FilesConfig {
  return parseConfig(FilesConfig, source);
}

/** The API process's settings: upload links are built there, so production must say where clients reach it. */
const FilesApiConfig = FilesConfig.refine((c) => c.NODE_ENV !== "production" || c.PUBLIC_BASE_URL !== undefined, {
  message: "required in production: the origin clients reach the API on, e.g. https://api.example.com (upload links are built on it)",
  path: ["PUBLIC_BASE_URL"],
});

export function loadApiConfig(source: NodeJS.ProcessEnv = process.env): FilesConfig {
  return parseConfig(FilesApiConfig, source);
}

/** The origin of upload links: PUBLIC_BASE_URL, else (outside production) the local gateway. */
export function publicBaseUrlOf(config: Pick<FilesConfig, "PUBLIC_BASE_URL" | "GATEWAY_URL">): string {
  return config.PUBLIC_BASE_URL ?? config.GATEWAY_URL ?? `http://127.0.0.1:${ServiceCatalog.gateway.port}`;
}

/** The upload-link key: its own setting, else one derived from the service's signing key (never that key itself). */
export function uploadSecretOf(config: Pick<FilesConfig, "FILES_UPLOAD_SECRET" | "INTERNAL_SIGNING_KEY">): string {
  return config.FILES_UPLOAD_SECRET ?? createHmac("sha256", config.INTERNAL_SIGNING_KEY).update("meter files upload links v1").digest("hex");
}

export function policyOf(config: FilesConfig): FilesPolicy {
  return {
    ...DEFAULT_POLICY,
    maxFileBytes: config.MAX_FILE_BYTES,
    maxImagePixels: config.MAX_IMAGE_PIXELS,
    quotaBytes: config.FILE_QUOTA_BYTES,
    completeWaitMs: config.COMPLETE_WAIT_MS,
    verifyRequeueAfterMs: config.VERIFY_REQUEUE_AFTER_MS,
    uploadLeaseMs: config.UPLOAD_LEASE_MS,
    uploadIdleTimeoutMs: config.UPLOAD_IDLE_TIMEOUT_MS,
  };
}

export function verificationRetryOf(config: FilesConfig): RetryPolicy {
  return { maxAttempts: config.VERIFY_RETRY_MAX_ATTEMPTS, backoffMs: config.VERIFY_RETRY_BACKOFF_MS };
}

export function objectStoreOptionsOf(config: FilesConfig): S3ObjectStoreOptions {
  return {
    endpoint: config.OBJECT_STORE_ENDPOINT,
    accessKey: config.OBJECT_STORE_ACCESS_KEY,
    secretKey: config.OBJECT_STORE_SECRET_KEY,
    region: config.OBJECT_STORE_REGION,
    bucket: config.FILES_BUCKET,
  };
}
