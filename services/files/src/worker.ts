import { createServer } from "node:http";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { closeServer, createLogger, createServiceApp, listen, Metrics, runService } from "@meter/service-kit";
import { ClamavScanner } from "./adapters/clamav-scanner";
import { S3ObjectStore } from "./adapters/s3-object-store";
import { loadConfig, objectStoreOptionsOf, policyOf, verificationRetryOf } from "./config";
import { startVerificationConsumer } from "./consumers/verification.consumer";
import { createDb } from "./db";
import { systemClock } from "./policy";
import { filesReadiness } from "./readiness";
import { FileRepository } from "./repositories/file.repository";
import { RetentionService } from "./services/retention.service";
import { VerificationService } from "./services/verification.service";

/**
 * The files worker: verifies completed uploads from the `files.verification` queue and runs the
 * retention sweeper. Any number may run; the queue and SKIP LOCKED share the work. It serves only
 * /healthz, /readyz and /metrics, on FILES_WORKER_PORT, for probes and scraping.
 */
const logger = createLogger("files-worker");

runService(logger, async () => {
  const config = loadConfig();
  const db = createDb(config.FILES_DATABASE_URL, config.DATABASE_POOL_SIZE);
  const files = new FileRepository(db);
  const store = new S3ObjectStore(objectStoreOptionsOf(config));
  const scanner = new ClamavScanner({ host: config.CLAMD_HOST, port: config.CLAMD_PORT, timeoutMs: config.CLAMD_TIMEOUT_MS });
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "files-worker", logger });
  // The sweeper re-sends stuck verifications through the outbox.
  const relay = startOutboxRelay({ db, bus, logger });

  const verification = new VerificationService({ files, store, scanner, clock: systemClock, logger });
  const consumer = await startVerificationConsumer(bus, verification, logger, {
    prefetch: config.VERIFY_CONCURRENCY,
    retry: verificationRetryOf(config),
  });
  const retention = new RetentionService({
    files,
    store,
    policy: policyOf(config),
    clock: systemClock,
    logger,
    kickOutbox: () => relay.kick(),
  }).start(config.SWEEP_INTERVAL_MS);
  // Ready when it can take work: clamd is left out, since while it is down the worker keeps the
  // files `verifying` and retries, which is its job, not a fault of the worker.
  const health = createServiceApp({ logger, metrics: new Metrics("files-worker"), readiness: filesReadiness(db, store, bus) }, () => {});
  const server = createServer(health);
  const port = await listen(server, config.FILES_WORKER_PORT, config.HOST);
  logger.info({ port, clamd: `${config.CLAMD_HOST}:${config.CLAMD_PORT}`, bucket: config.FILES_BUCKET }, "files worker running");

  return {
    close: async () => {
      await closeServer(server);
      await retention.stop();
      await consumer.stop();
      await relay.stop();
      await bus.close();
      await db.$disconnect();
    },
  };
});
