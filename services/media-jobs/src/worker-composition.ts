import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { BillingClient, FilesClient } from "@meter/service-clients";
import { createInternalAuth, createServiceApp, InternalClient, Metrics, rawSqlOf, type InternalAuth, type Logger } from "@meter/service-kit";
import { InputFiles } from "./adapters/input-files.adapter";
import { MediaEngines } from "./adapters/media-engines.adapter";
import { jobRetryOf, type MediaJobsConfig } from "./config";
import { startJobRequestedConsumer } from "./consumers/job-requested.consumer";
import { createDatabase, type MediaJobsDatabase } from "./db";
import { createLocalEngines } from "./providers/local";
import { JobRepository } from "./repositories/job.repository";
import { JobReservation } from "./services/job-reservation";
import { JobRunner } from "./services/job-runner";
import { Reconciler } from "./services/reconciler.service";

export interface MediaWorkerComposition {
  /** /healthz, /readyz and /metrics only: nothing is routed to a worker. */
  app: Express;
  database: MediaJobsDatabase;
  runner: JobRunner;
  reconciler: Reconciler;
  workerId: string;
  close(): Promise<void>;
}

export interface MediaWorkerOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

/**
 * The composition root of the worker process (the `media-jobs-worker` deployable, scaled on its own):
 * the engines, warmed before the first job is taken, the consumer of the job queue, and the reconciler.
 * It signs its calls as itself, so the API process's key never sits beside untrusted input parsing.
 */
export async function composeWorker(config: MediaJobsConfig, overrides: MediaWorkerOverrides): Promise<MediaWorkerComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("media-jobs-worker", config);
  const workerId = randomUUID();
  const engines = new MediaEngines(createLocalEngines({ ocrProcesses: config.MEDIA_JOBS_OCR_PROCESSES }));
  // Models loaded and binaries checked before any job is taken: no job pays a start-up cost.
  const warm = Date.now();
  await engines.warmUp();
  logger.info({ ms: Date.now() - warm }, "engines warmed up");

  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "media-jobs-worker", logger });
  await bus.declareQueue(CommandQueues.billingHoldCommands);
  const database = createDatabase(config.MEDIA_JOBS_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) =>
    logger.warn({ err }, "an idle database connection was lost"),
  );
  const billingHttp = new InternalClient({ baseUrl: config.BILLING_LEDGER_URL, auth, audience: "billing-ledger" });
  const filesHttp = new InternalClient({ baseUrl: config.FILES_URL, auth, audience: "files" });
  const files = new FilesClient(filesHttp);
  const repo = new JobRepository(database.pool, config.MEDIA_JOBS_REQUEUE_AFTER_MS);
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger });
  const onOutbox = () => relay.kick();
  const runner = new JobRunner({
    repo,
    engines,
    inputs: new InputFiles(files),
    files,
    logger,
    workerId,
    leaseMs: config.MEDIA_JOBS_LEASE_MS,
    maxAttempts: config.MEDIA_JOBS_MAX_ATTEMPTS,
    onOutbox,
  });
  const reservation = new JobReservation({ repo, billing: new BillingClient(billingHttp), logger, onOutbox });
  const reconciler = new Reconciler(repo, reservation, logger, {
    workerId,
    intervalMs: config.RECONCILE_INTERVAL_MS,
    leaseMs: config.MEDIA_JOBS_LEASE_MS,
    maxAttempts: config.MEDIA_JOBS_MAX_ATTEMPTS,
    retentionMs: config.MEDIA_JOBS_RETENTION_DAYS * 86_400_000,
    onOutbox,
  });
  const consumer = await startJobRequestedConsumer(bus, runner, { prefetch: config.MEDIA_JOBS_CONCURRENCY, retry: jobRetryOf(config) });
  reconciler.start();

  const metrics = new Metrics("media-jobs-worker");
  const app = createServiceApp(
    {
      logger,
      metrics,
      readiness: [
        { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
        {
          name: "broker",
          check: () => (bus.isConnected() ? Promise.resolve() : Promise.reject(new Error("not connected to RabbitMQ"))),
        },
      ],
    },
    () => {},
  );
  logger.info({ workerId, concurrency: config.MEDIA_JOBS_CONCURRENCY }, "media-jobs worker consuming");

  return {
    app,
    database,
    runner,
    reconciler,
    workerId,
    async close() {
      reconciler.stop();
      // Stops new deliveries and waits for the jobs under way, whose messages are then acked.
      await consumer.stop();
      await relay.stop();
      await bus.close();
      await engines.close();
      await billingHttp.close();
      await filesHttp.close();
      await database.close();
    },
  };
}
