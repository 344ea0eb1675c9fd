import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { CommandQueues } from "@meter/contracts";
import { startOutboxRelay, type Bus, type OutboxRelay } from "@meter/messaging";
import { InternalClient, Metrics, type Logger } from "@meter/service-kit";
import { BillingAdapter } from "./adapters/billing.adapter";
import { CatalogCache } from "./adapters/catalog-cache";
import { createApp } from "./app";
import { createDatabase, type Db } from "./db";
import { closeUpstreamAgents, createProvider } from "./providers";
import { TextRequestRepository } from "./repositories/text-request.repository";
import { QuoteService } from "./services/quote.service";
import { Reconciler } from "./services/reconciler.service";
import { TextRequestService } from "./services/text-request.service";
import { TextRunner } from "./services/text-runner";

export interface TextServiceOptions {
  databaseUrl: string;
  databasePoolSize?: number;
  billingUrl: string;
  internalSecret: string;
  logger: Logger;
  /** The bus for handing settlements off when billing is unreachable. */
  bus: Bus;
  env: NodeJS.ProcessEnv;
  syncTimeoutMs: number;
  upstreamTimeoutMs: number;
  defaultMaxTokens: number;
  catalogRefreshMs: number;
  reconcileIntervalMs: number;
  /** How long a silent process is given before its requests are taken over. */
  workerStaleMs?: number;
  retentionHours: number;
  bodyLimitBytes?: number;
  upstreamRetryDelaysMs?: readonly number[];
  parkBaseMs?: number;
}

export interface TextService {
  app: Express;
  db: Db;
  runner: TextRunner;
  reconciler: Reconciler;
  catalog: CatalogCache;
  workerId: string;
  close(): Promise<void>;
}

/** The composition root: main.ts and the tests build the service the same way. */
export async function createTextService(opts: TextServiceOptions): Promise<TextService> {
  const workerId = randomUUID();
  // A settlement handed off while billing has never run must wait in its queue, not be unroutable.
  await opts.bus.declareQueue(CommandQueues.billingHoldCommands);
  const database = createDatabase(opts.databaseUrl, opts.databasePoolSize ?? 10, (err) =>
    opts.logger.warn({ err }, "an idle database connection was lost"),
  );
  const db = database.prisma;
  const billingClient = new InternalClient({ baseUrl: opts.billingUrl, secret: opts.internalSecret, identity: { kind: "service", service: "text" } });
  const catalog = new CatalogCache(billingClient, opts.catalogRefreshMs, opts.logger);
  const repo = new TextRequestRepository(database);
  const relay: OutboxRelay = startOutboxRelay({ db, bus: opts.bus, logger: opts.logger });
  const runner = new TextRunner({
    db: database,
    repo,
    billing: new BillingAdapter(billingClient),
    providerFor: (p) => createProvider(p, opts.env),
    logger: opts.logger,
    workerId,
    upstreamTimeoutMs: opts.upstreamTimeoutMs,
    onOutbox: () => relay.kick(),
    ...(opts.upstreamRetryDelaysMs ? { upstreamRetryDelaysMs: opts.upstreamRetryDelaysMs } : {}),
    ...(opts.parkBaseMs !== undefined ? { parkBaseMs: opts.parkBaseMs } : {}),
  });
  const reconciler = new Reconciler(repo, runner, opts.logger, {
    workerId,
    intervalMs: opts.reconcileIntervalMs,
    staleMs: opts.workerStaleMs ?? 15_000,
    retentionMs: opts.retentionHours * 3_600_000,
  });
  await catalog.refresh().catch((e: unknown) => opts.logger.warn({ err: e }, "catalog not loaded yet; not ready until it is"));
  catalog.start();
  await reconciler.start();

  const app = createApp({
    internalSecret: opts.internalSecret,
    logger: opts.logger,
    metrics: new Metrics("text"),
    requests: new TextRequestService({
      repo,
      runner,
      catalog,
      workerId,
      syncTimeoutMs: opts.syncTimeoutMs,
      env: opts.env,
      logger: opts.logger,
    }),
    quotes: new QuoteService(catalog, opts.defaultMaxTokens, opts.env),
    defaultMaxTokens: opts.defaultMaxTokens,
    bodyLimitBytes: opts.bodyLimitBytes ?? 10 * 1024 * 1024 + 64 * 1024,
    readiness: [
      { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
      {
        name: "catalog",
        check: async () => {
          if (!catalog.ready) await catalog.refresh();
        },
      },
    ],
  });

  return {
    app,
    db,
    runner,
    reconciler,
    catalog,
    workerId,
    async close() {
      catalog.stop();
      await runner.drain(10_000);
      await reconciler.stop();
      await relay.stop();
      await billingClient.close();
      await closeUpstreamAgents();
      await database.close();
    },
  };
}
