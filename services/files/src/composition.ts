import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { busReady, createInternalAuth, databaseReady, Metrics, rawSqlOf, type InternalAuth, type Logger, type ReadinessCheck } from "@meter/service-kit";
import type { ObjectStore } from "./adapters/object-store";
import { PgUploadLocks } from "./adapters/pg-upload-locks";
import { S3ObjectStore } from "./adapters/s3-object-store";
import type { UploadLocks } from "./adapters/upload-locks";
import { createApp } from "./app";
import { objectStoreOptionsOf, policyOf, uploadSecretOf, type FilesConfig } from "./config";
import { createDatabase, type Db, type FilesDatabase } from "./db";
import { systemClock, type Clock, type FilesPolicy } from "./policy";
import { FileRepository } from "./repositories/file.repository";
import { CompletionService } from "./services/completion.service";
import { FileService } from "./services/file.service";
import { JobResultService } from "./services/job-result.service";
import { UploadAttemptService } from "./services/upload-attempt.service";
import { UploadLinkService } from "./services/upload-link.service";
import { UploadService } from "./services/upload.service";

export interface FilesServices {
  files: FileService;
  uploads: UploadService;
  completion: CompletionService;
  results: JobResultService;
}

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

/** What both files processes need to do any work: their database, the object store and the broker. */
export function readiness(database: FilesDatabase, store: S3ObjectStore, bus: { isConnected(): boolean }): ReadinessCheck[] {
  return [databaseReady(database.pool), { name: "object_store", check: () => store.check() }, busReady(bus)];
}

/**
 * The composition root of the files API process: signed upload links streamed into the object store,
 * completion (which hands verification to the worker through the outbox), downloads, the internal API
 * for media jobs. The same for main.ts and the tests.
 */
export async function compose(config: FilesConfig, overrides: FilesOverrides): Promise<FilesComposition> {
  const { logger } = overrides;
  const database = createDatabase(config.FILES_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) => logger.warn({ err }, "an idle database connection was lost"));
  const store = new S3ObjectStore(objectStoreOptionsOf(config));
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "files", logger });
  // A command queue: declared by its publisher too, so a completion before the worker's first start waits there.
  await bus.declareQueue(CommandQueues.filesVerification);
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger, ...(overrides.relayIdleMs ? { idleMs: overrides.relayIdleMs } : {}) });
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
    auth: overrides.auth ?? createInternalAuth("files", config),
    logger,
    metrics: new Metrics("files"),
    services,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    readiness: readiness(database, store, bus),
  });
  return {
    app,
    database,
    services,
    store,
    policy,
    async close() {
      // After the server (serve() closes it first): no PUT is streaming any more.
      await uploadLocks.close();
      await relay.stop();
      await bus.close();
      await database.close();
    },
  };
}
