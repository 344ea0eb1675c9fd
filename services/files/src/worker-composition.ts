import type { Express } from "express";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { createServiceApp, Metrics, rawSqlOf } from "@meter/service-kit";
import { ClamavScanner } from "./adapters/clamav-scanner";
import { S3ObjectStore } from "./adapters/s3-object-store";
import { readiness, type FilesOverrides } from "./composition";
import { objectStoreOptionsOf, policyOf, verificationRetryOf, type FilesConfig } from "./config";
import { startVerificationConsumer } from "./consumers/verification.consumer";
import { createDatabase } from "./db";
import { systemClock } from "./policy";
import { FileRepository } from "./repositories/file.repository";
import { RetentionService } from "./services/retention.service";
import { VerificationService } from "./services/verification.service";

export interface FilesWorkerComposition {
  /** Only /healthz, /readyz and /metrics, for probes and scraping. */
  app: Express;
  verification: VerificationService;
  retention: RetentionService;
  close(): Promise<void>;
}

/**
 * The composition root of the files worker: verifies completed uploads from the `files.verification`
 * queue and runs the retention sweeper. Any number may run; the queue and SKIP LOCKED share the work.
 */
export async function composeWorker(config: FilesConfig, overrides: FilesOverrides): Promise<FilesWorkerComposition> {
  const { logger } = overrides;
  const clock = overrides.clock ?? systemClock;
  const database = createDatabase(config.FILES_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) => logger.warn({ err }, "an idle database connection was lost"));
  const files = new FileRepository(database.prisma);
  const store = new S3ObjectStore(objectStoreOptionsOf(config));
  const scanner = new ClamavScanner({ host: config.CLAMD_HOST, port: config.CLAMD_PORT, timeoutMs: config.CLAMD_TIMEOUT_MS });
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "files-worker", logger });
  // The sweeper re-sends stuck verifications through the outbox.
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger });
  const verification = new VerificationService({ files, store, scanner, clock, logger });
  const consumer = await startVerificationConsumer(bus, verification, logger, {
    prefetch: config.VERIFY_CONCURRENCY,
    retry: verificationRetryOf(config),
  });
  const retention = new RetentionService({
    files,
    store,
    policy: { ...policyOf(config), ...overrides.policy },
    clock,
    logger,
    kickOutbox: () => relay.kick(),
  });
  const sweeping = retention.start(config.SWEEP_INTERVAL_MS);
  // Ready when it can take work: clamd is left out, since while it is down the worker keeps the
  // files `verifying` and retries, which is its job, not a fault of the worker.
  const app = createServiceApp({ logger, metrics: new Metrics("files-worker"), readiness: readiness(database, store, bus) }, () => {});
  logger.info({ clamd: `${config.CLAMD_HOST}:${config.CLAMD_PORT}`, bucket: config.FILES_BUCKET }, "files worker running");
  return {
    app,
    verification,
    retention,
    async close() {
      await sweeping.stop();
      await consumer.stop();
      await relay.stop();
      await bus.close();
      await database.close();
    },
  };
}
