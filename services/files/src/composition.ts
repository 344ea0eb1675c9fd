import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import {
  busReady,
  createInternalAuth,
  createServiceApp,
  databaseReady,
  Metrics,
  rawSqlOf,
  stepOfStop,
  type InternalAuth,
  type Logger,
  type ReadinessCheck,
} from "@meter/service-kit";
import { ClamavScanner } from "./adapters/clamav-scanner";
import { scannerReadiness } from "./adapters/clamd-signatures";
import type { ObjectStore } from "./adapters/object-store";
import { PgUploadLocks } from "./adapters/pg-upload-locks";
import { S3ObjectStore } from "./adapters/s3-object-store";
import type { UploadLocks } from "./adapters/upload-locks";
import { createApp, type FilesServices } from "./app";
import { objectStoreOptionsOf, policyOf, publicBaseUrlOf, uploadSecretOf, verificationRetryOf, type FilesConfig } from "./config";
import { startVerificationConsumer } from "./consumers/verification.consumer";
import { createDatabase, type Db, type FilesDatabase } from "./db";
import { systemClock, type Clock, type FilesPolicy } from "./domain/policy";
import { FileRepository } from "./repositories/file.repository";
import { CompletionService } from "./services/completion.service";
import { FileService } from "./services/file.service";
import { JobResultService } from "./services/job-result.service";
import { RetentionService } from "./services/retention.service";
import { UploadAttemptService } from "./services/upload-attempt.service";
import { UploadLinkService } from "./services/upload-link.service";
import { UploadService } from "./services/upload.service";
import { VerificationService } from "./services/verification.service";

/** Within /readyz's 2 s per check and the health report's 1.5 s per service. */
const SCANNER_PROBE_TIMEOUT_MS = 1_000;

// Declared beside the routes that use them (app.ts), so app.ts needs nothing of this file.
export type { FilesServices } from "./app";

export interface FilesServicesDeps {
  db: Db;
  store: ObjectStore;
  /** Which process streams each upload; the PostgreSQL one in production and tests. */
  uploadLocks: UploadLocks;
  links: UploadLinkService;
  policy: FilesPolicy;
  clock: Clock;
  logger: Logger;
  /** Wakes the outbox relay after a verification message was committed. */
  kickOutbox: () => void;
}

export function createFilesServices(deps: FilesServicesDeps): FilesServices {
  const files = new FileRepository(deps.db);
  const shared = { files, store: deps.store, clock: deps.clock, logger: deps.logger };
  const attempts = new UploadAttemptService({ ...shared, locks: deps.uploadLocks, policy: deps.policy });
  return {
    files: new FileService({ ...shared, links: deps.links, policy: deps.policy }),
    uploads: new UploadService({ ...shared, links: deps.links, attempts }),
    completion: new CompletionService({ files, attempts, policy: deps.policy, clock: deps.clock, kickOutbox: deps.kickOutbox }),
    results: new JobResultService({ ...shared, policy: deps.policy }),
  };
}

/** What tests may replace; main.ts and worker.ts pass only the logger. */
export interface FilesOverrides {
  logger: Logger;
  auth?: InternalAuth;
  clock?: Clock;
  /** Changes to the policy the settings give (tests shrink waits and limits). */
  policy?: Partial<FilesPolicy>;
  /** How long the outbox relay sleeps when idle (tests make it short). */
  relayIdleMs?: number;
}

export interface FilesComposition {
  app: Express;
  database: FilesDatabase;
  services: FilesServices;
  store: S3ObjectStore;
  policy: FilesPolicy;
  close(): Promise<void>;
}

export interface FilesWorkerComposition {
  /** Only /healthz, /readyz and /metrics, for probes and scraping. */
  app: Express;
  verification: VerificationService;
  retention: RetentionService;
  close(): Promise<void>;
}

/**
 * What both files processes stand on: their database, the object store, the broker and the outbox relay
 * (the API process writes verification commands to it, the worker's sweeper re-sends stuck ones), and
 * the readiness that follows from them: ready when it can take work. The scanner is reported beside
 * them, not counted (scannerReadiness).
 */
async function wireShared(config: FilesConfig, overrides: FilesOverrides, name: "files" | "files-worker", metrics: Metrics) {
  const { logger } = overrides;
  // The worker makes no internal calls, but it signs what its sweeper re-sends, with a key of its own.
  const auth = overrides.auth ?? createInternalAuth(name, config);
  const database = createDatabase(config.FILES_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) => logger.warn({ err }, "an idle database connection was lost"));
  const store = new S3ObjectStore(objectStoreOptionsOf(config));
  const bus = await connectBus({
    url: config.RABBITMQ_URL,
    name,
    topology: "await",
    logger,
    keys: auth.keys,
    commandSign: config.BUS_COMMAND_SIGN,
    registry: metrics.registry,
  });
  // files-worker's consumer declares the queue; a completion before its first start waits in the outbox.
  bus.requireQueue(CommandQueues.filesVerification);
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger, ...(overrides.relayIdleMs ? { idleMs: overrides.relayIdleMs } : {}) });
  const readiness: ReadinessCheck[] = [
    databaseReady(database.pool),
    { name: "object_store", check: () => store.check() },
    busReady(bus),
    scannerReadiness({ host: config.CLAMD_HOST, port: config.CLAMD_PORT, timeoutMs: SCANNER_PROBE_TIMEOUT_MS }),
  ];
  return {
    auth,
    database,
    store,
    bus,
    relay,
    readiness,
    async close() {
      await stepOfStop("relay.stop()", () => relay.stop());
      await stepOfStop("bus.close()", () => bus.close());
      await stepOfStop("database.close()", () => database.close());
    },
  };
}

/**
 * The composition root of the files API process: signed upload links streamed into the object store,
 * completion (which hands verification to the worker through the outbox), downloads, the internal API
 * for media jobs. The same for main.ts and the tests.
 */
export async function compose(config: FilesConfig, overrides: FilesOverrides): Promise<FilesComposition> {
  const { logger } = overrides;
  const metrics = new Metrics("files");
  const shared = await wireShared(config, overrides, "files", metrics);
  const { database, store, relay } = shared;
  const uploadLocks = new PgUploadLocks(config.FILES_DATABASE_URL, logger);
  const policy = { ...policyOf(config), ...overrides.policy };
  const services = createFilesServices({
    db: database.prisma,
    store,
    uploadLocks,
    links: new UploadLinkService(uploadSecretOf(config)),
    policy,
    clock: overrides.clock ?? systemClock,
    logger,
    kickOutbox: () => relay.kick(),
  });
  const app = createApp({
    auth: shared.auth,
    logger,
    metrics,
    services,
    publicBaseUrl: publicBaseUrlOf(config),
    readiness: shared.readiness,
  });
  return {
    app,
    database,
    services,
    store,
    policy,
    async close() {
      // After the server (serve() closes it first): no PUT is streaming any more.
      await stepOfStop("uploadLocks.close()", () => uploadLocks.close());
      await stepOfStop("shared.close()", () => shared.close());
    },
  };
}

/**
 * The composition root of the files worker: verifies completed uploads from the `files.verification`
 * queue and runs the retention sweeper. Any number may run; the queue and SKIP LOCKED share the work.
 * Ready when it can take work: clamd is left out, since while it is down the worker keeps the files
 * `verifying` and retries, which is its job, not a fault of the worker.
 */
export async function composeWorker(config: FilesConfig, overrides: FilesOverrides): Promise<FilesWorkerComposition> {
  const { logger } = overrides;
  const clock = overrides.clock ?? systemClock;
  const metrics = new Metrics("files-worker");
  const shared = await wireShared(config, overrides, "files-worker", metrics);
  const { database, store, bus, relay } = shared;
  const files = new FileRepository(database.prisma);
  const scanner = new ClamavScanner({ host: config.CLAMD_HOST, port: config.CLAMD_PORT, timeoutMs: config.CLAMD_TIMEOUT_MS });
  const policy = { ...policyOf(config), ...overrides.policy };
  const verification = new VerificationService({ files, store, scanner, clock, logger, maxImagePixels: policy.maxImagePixels });
  const consumer = await startVerificationConsumer(bus, verification, logger, {
    prefetch: config.VERIFY_CONCURRENCY,
    retry: verificationRetryOf(config),
  });
  const retention = new RetentionService({
    files,
    store,
    policy,
    clock,
    logger,
    kickOutbox: () => relay.kick(),
  });
  const sweeping = retention.start(config.SWEEP_INTERVAL_MS);
  const app = createServiceApp({ logger, metrics, readiness: shared.readiness }, () => {});
  logger.info({ clamd: `${config.CLAMD_HOST}:${config.CLAMD_PORT}`, bucket: config.FILES_BUCKET }, "files worker running");
  return {
    app,
    verification,
    retention,
    async close() {
      await stepOfStop("sweeping.stop()", () => sweeping.stop());
      await stepOfStop("consumer.stop()", () => consumer.stop());
      await stepOfStop("shared.close()", () => shared.close());
    },
  };
}
