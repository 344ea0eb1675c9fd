import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay, type Bus, type OutboxRelay, type QueueSpec } from "@meter/messaging";
import { HoldCommandsAdapter, HoldOwnerAudit } from "@meter/hold-client";
import { BillingClient, CatalogCache, FilesClient, restorePointOf } from "@meter/service-clients";
import {
  busReady,
  busTopologyReady,
  createInternalAuth,
  stepOfStop,
  createServiceApp,
  InternalClient,
  Metrics,
  rawSqlOf,
  type InternalAuth,
  type Logger,
} from "@meter/service-kit";
import { InputFiles } from "./adapters/input-files.adapter";
import { MediaEngines } from "./adapters/media-engines.adapter";
import { createApp } from "./app";
import { jobRetryOf, type MediaJobsConfig } from "./config";
import { startJobRequestedConsumer } from "./consumers/job-requested.consumer";
import { createDatabase, type MediaJobsDatabase } from "./db";
import { createLocalEngines } from "@meter/media-engines";
import { closeUpstreamAgents, retryDelaysOf, routingMetricsOf, sharedProviderHealth } from "@meter/upstreams";
import { holdResolutionOf } from "./domain/job-record";
import { JobRepository } from "./repositories/job.repository";
import { JobCancelService } from "./services/job-cancel.service";
import { JobPlanner } from "./services/job-planner";
import { JobQueryService } from "./services/job-query.service";
import { MemberJobsService } from "./services/member-jobs.service";
import { JobRequestService } from "./services/job-request.service";
import { JobReservation } from "./services/job-reservation";
import { JobRunner } from "./services/job-runner";
import { UpstreamCalls } from "./services/upstream-calls";
import { QuoteService } from "./services/quote.service";
import { Reconciler } from "./services/reconciler.service";

export interface MediaJobsComposition {
  app: Express;
  database: MediaJobsDatabase;
  catalog: CatalogCache;
  close(): Promise<void>;
}

/** What tests may replace; main.ts and worker.ts pass only the logger. */
export interface MediaJobsOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

export interface MediaWorkerComposition {
  /** /healthz, /readyz and /metrics only: nothing is routed to a worker. */
  app: Express;
  database: MediaJobsDatabase;
  runner: JobRunner;
  reconciler: Reconciler;
  workerId: string;
  close(): Promise<void>;
}

export type MediaWorkerOverrides = MediaJobsOverrides;

/** What both processes build alike: the broker, the database, the signed clients, the job rows and their outbox. */
interface SharedWiring {
  bus: Bus;
  database: MediaJobsDatabase;
  billing: BillingClient;
  files: FilesClient;
  repo: JobRepository;
  relay: OutboxRelay;
  onOutbox: () => void;
  /** The readiness check of the process's own database. */
  databaseReady: { name: string; check: () => Promise<void> };
  /** Stops the relay, then closes the bus, the engines, the clients and the database, in that order. */
  close(engines: MediaEngines): Promise<void>;
}

/**
 * The wiring both composition roots share. `name` is the deployable (the bus connection's name), `queues`
 * the command queues it publishes to (their consumers declare them: Bus.requireQueue); `auth` signs the
 * calls and the messages as that deployable.
 */
async function wireShared(
  config: MediaJobsConfig,
  logger: Logger,
  auth: InternalAuth,
  name: "media-jobs" | "media-jobs-worker",
  queues: readonly QueueSpec[],
  metrics: Metrics,
): Promise<SharedWiring> {
  const bus = await connectBus({
    url: config.RABBITMQ_URL,
    name,
    topology: "await",
    logger,
    keys: auth.keys,
    commandSign: config.BUS_COMMAND_SIGN,
    registry: metrics.registry,
  });
  for (const queue of queues) bus.requireQueue(queue);
  const database = createDatabase(config.MEDIA_JOBS_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) =>
    logger.warn({ err }, "an idle database connection was lost"),
  );
  const billingHttp = new InternalClient({ baseUrl: config.BILLING_LEDGER_URL, auth, audience: "billing-ledger" });
  const filesHttp = new InternalClient({ baseUrl: config.FILES_URL, auth, audience: "files" });
  const repo = new JobRepository(database.pool, config.MEDIA_JOBS_REQUEUE_AFTER_MS);
  // The database is recorded before any job, so every backup of it carries its incarnation (the restore point).
  await restorePointOf((sql) => database.pool.query(sql));
  const billing = new BillingClient(billingHttp);
  // Hold commands go to billing over HTTP when the broker cannot take them (docs/api.md, "Allowances").
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus: new HoldCommandsAdapter(bus, billing, logger), logger });
  return {
    bus,
    database,
    billing,
    files: new FilesClient(filesHttp),
    repo,
    relay,
    onOutbox: () => relay.kick(),
    databaseReady: { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
    async close(engines) {
      await stepOfStop("relay.stop()", () => relay.stop());
      await stepOfStop("bus.close()", () => bus.close());
      await stepOfStop("engines.close()", () => engines.close());
      await stepOfStop("billingHttp.close()", () => billingHttp.close());
      await stepOfStop("filesHttp.close()", () => filesHttp.close());
      await stepOfStop("closeUpstreamAgents()", () => closeUpstreamAgents());
      await stepOfStop("database.close()", () => database.close());
    },
  };
}

/**
 * The composition root of the API process: validation, pricing and admission of jobs (the hold, the job
 * row and its message), quotes, reads, cancels and billing's hold audit. The engines are here only to
 * measure inputs; jobs run in worker.ts.
 */
export async function compose(config: MediaJobsConfig, overrides: MediaJobsOverrides): Promise<MediaJobsComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("media-jobs", config);
  // Commands sent before their consumer ever ran wait in the outbox until it has declared their queue.
  const metrics = new Metrics("media-jobs");
  const shared = await wireShared(config, logger, auth, "media-jobs", [CommandQueues.mediaJobs, CommandQueues.billingHoldCommands], metrics);
  const { database, billing, repo, onOutbox } = shared;
  const catalog = new CatalogCache(billing, config.CATALOG_REFRESH_MS, logger);
  // Only measure() runs here (headers, page counts): no Tesseract process is ever started by this process.
  const engines = new MediaEngines(createLocalEngines({ ocrProcesses: 1 }), config.upstreamKeys);
  const planner = new JobPlanner({ catalog, engines, files: new InputFiles(shared.files), maxInputBytes: config.MEDIA_JOBS_MAX_INPUT_BYTES });
  const reservation = new JobReservation({ repo, billing, logger, onOutbox });
  const queries = new JobQueryService(repo);

  await catalog.start({ bus: shared.bus, queue: "media-jobs.catalog-changed" });

  const app = createApp({
    auth,
    logger,
    metrics,
    requests: new JobRequestService({ repo, planner, reservation, processId: randomUUID(), leaseMs: config.MEDIA_JOBS_LEASE_MS, logger }),
    queries,
    cancels: new JobCancelService({ repo, queries, onOutbox }),
    quotes: new QuoteService(planner),
    audit: new HoldOwnerAudit(repo, holdResolutionOf, () => restorePointOf((sql) => database.pool.query(sql))),
    memberJobs: new MemberJobsService(repo),
    // Its own database only: readiness that waited for billing-ledger (the catalog) would take every
    // replica out of service while billing rolls out. Until the catalog loads (it retries on its own
    // timer), requests are refused with 503 and nothing reserved. On a broker billing-ledger never ran
    // on, also the bus topology it waits for.
    readiness: [shared.databaseReady, busTopologyReady(shared.bus)],
  });

  return {
    app,
    database,
    catalog,
    async close() {
      await stepOfStop("catalog.stop()", () => catalog.stop());
      await stepOfStop("shared.close(engines)", () => shared.close(engines));
    },
  };
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
  const engines = new MediaEngines(createLocalEngines({ ocrProcesses: config.MEDIA_JOBS_OCR_PROCESSES }), config.upstreamKeys);
  // Models loaded and binaries checked before any job is taken: no job pays a start-up cost.
  const warm = Date.now();
  await engines.warmUp();
  logger.info({ ms: Date.now() - warm }, "engines warmed up");

  const metrics = new Metrics("media-jobs-worker");
  const shared = await wireShared(config, logger, auth, "media-jobs-worker", [CommandQueues.mediaJobs, CommandQueues.billingHoldCommands], metrics);
  const { bus, database, files, repo, onOutbox } = shared;
  const upstream = new UpstreamCalls({
    repo,
    timeoutMs: config.MEDIA_JOBS_UPSTREAM_TIMEOUT_MS,
    retryDelaysMs: retryDelaysOf(config, "MEDIA_JOBS"),
    logger,
    routing: { health: sharedProviderHealth(database.pool, config, "MEDIA_JOBS", logger), metrics: routingMetricsOf(metrics, "media_jobs") },
  });
  const runner = new JobRunner({
    repo,
    engines,
    inputs: new InputFiles(files),
    files,
    upstream,
    logger,
    workerId,
    leaseMs: config.MEDIA_JOBS_LEASE_MS,
    maxAttempts: config.MEDIA_JOBS_MAX_ATTEMPTS,
    stallTimeoutMs: config.MEDIA_JOBS_STALL_TIMEOUT_MS,
    onOutbox,
  });
  const reservation = new JobReservation({ repo, billing: shared.billing, logger, onOutbox });
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

  const app = createServiceApp(
    {
      logger,
      metrics,
      readiness: [shared.databaseReady, { ...busReady(bus), name: "broker" }],
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
      await stepOfStop("consumer.stop()", () => consumer.stop());
      await stepOfStop("shared.close(engines)", () => shared.close(engines));
    },
  };
}
