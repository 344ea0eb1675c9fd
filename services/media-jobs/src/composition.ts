import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { BillingClient, CatalogCache, FilesClient } from "@meter/service-clients";
import { createInternalAuth, InternalClient, Metrics, rawSqlOf, type InternalAuth, type Logger } from "@meter/service-kit";
import { InputFiles } from "./adapters/input-files.adapter";
import { MediaEngines } from "./adapters/media-engines.adapter";
import { createApp } from "./app";
import type { MediaJobsConfig } from "./config";
import { createDatabase, type MediaJobsDatabase } from "./db";
import { createLocalEngines } from "./providers/local";
import { JobRepository } from "./repositories/job.repository";
import { HoldAuditService } from "./services/hold-audit.service";
import { JobCancelService } from "./services/job-cancel.service";
import { JobPlanner } from "./services/job-planner";
import { JobQueryService } from "./services/job-query.service";
import { MemberJobsService } from "./services/member-jobs.service";
import { JobRequestService } from "./services/job-request.service";
import { JobReservation } from "./services/job-reservation";
import { QuoteService } from "./services/quote.service";

export interface MediaJobsComposition {
  app: Express;
  database: MediaJobsDatabase;
  catalog: CatalogCache;
  close(): Promise<void>;
}

/** What tests may replace; main.ts passes only the logger. */
export interface MediaJobsOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

/**
 * The composition root of the API process: validation, pricing and admission of jobs (the hold, the job
 * row and its message), quotes, reads, cancels and billing's hold audit. The engines are here only to
 * measure inputs; jobs run in worker.ts.
 */
export async function compose(config: MediaJobsConfig, overrides: MediaJobsOverrides): Promise<MediaJobsComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("media-jobs", config);
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "media-jobs", logger });
  // Commands sent before their consumer ever ran must wait in its queue, not be unroutable.
  await bus.declareQueue(CommandQueues.mediaJobs);
  await bus.declareQueue(CommandQueues.billingHoldCommands);
  const database = createDatabase(config.MEDIA_JOBS_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) =>
    logger.warn({ err }, "an idle database connection was lost"),
  );
  const billingHttp = new InternalClient({ baseUrl: config.BILLING_LEDGER_URL, auth, audience: "billing-ledger" });
  const filesHttp = new InternalClient({ baseUrl: config.FILES_URL, auth, audience: "files" });
  const billing = new BillingClient(billingHttp);
  const catalog = new CatalogCache(billing, config.CATALOG_REFRESH_MS, logger);
  const repo = new JobRepository(database.pool, config.MEDIA_JOBS_REQUEUE_AFTER_MS);
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger });
  // Only measure() runs here (headers, page counts): no Tesseract process is ever started by this process.
  const engines = new MediaEngines(createLocalEngines({ ocrProcesses: 1 }));
  const planner = new JobPlanner({ catalog, engines, files: new InputFiles(new FilesClient(filesHttp)), maxInputBytes: config.MEDIA_JOBS_MAX_INPUT_BYTES });
  const onOutbox = () => relay.kick();
  const reservation = new JobReservation({ repo, billing, logger, onOutbox });
  const queries = new JobQueryService(repo);

  await catalog.start({ bus, queue: "media-jobs.catalog-changed" });

  const app = createApp({
    auth,
    logger,
    metrics: new Metrics("media-jobs"),
    requests: new JobRequestService({ repo, planner, reservation, billing, processId: randomUUID(), leaseMs: config.MEDIA_JOBS_LEASE_MS, logger }),
    queries,
    cancels: new JobCancelService({ repo, queries, onOutbox }),
    quotes: new QuoteService(planner),
    audit: new HoldAuditService(repo),
    memberJobs: new MemberJobsService(repo),
    readiness: [
      // Its own database only: readiness that waited for billing-ledger (the catalog) would take every
      // replica out of service while billing rolls out. Until the catalog loads (it retries on its own
      // timer), requests are refused with 503 and nothing reserved.
      { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
    ],
  });

  return {
    app,
    database,
    catalog,
    async close() {
      await catalog.stop();
      await relay.stop();
      await bus.close();
      await engines.close();
      await billingHttp.close();
      await filesHttp.close();
      await database.close();
    },
  };
}
