import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { Allocator } from "@meter/allowances";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay, type Bus } from "@meter/messaging";
import { HoldCommandsAdapter } from "@meter/hold-client";
import { BillingClient, CatalogCache, restorePointOf } from "@meter/service-clients";
import {
  busTopologyReady,
  createInternalAuth,
  stepOfStop,
  InternalClient,
  Metrics,
  PeriodicPass,
  rawSqlOf,
  timeMethods,
  type InternalAuth,
  type Logger,
} from "@meter/service-kit";
import { createApp } from "./app";
import type { TextConfig } from "./config";
import { createDatabase, type TextDatabase } from "./db";
import { closeUpstreamAgents, retryDelaysOf, routingMetricsOf, sharedProviderHealth } from "@meter/upstreams";
import { createProvider } from "./providers";
import { AllowanceRepository } from "./repositories/allowance.repository";
import { TextRequestRepository } from "./repositories/text-request.repository";
import { HoldAuditService } from "./services/hold-audit.service";
import { QuoteService } from "./services/quote.service";
import { Reconciler } from "./services/reconciler.service";
import { RoutingViewService } from "./services/routing-view.service";
import { TextRequestService } from "./services/text-request.service";
import { TextRunner } from "./services/text-runner";

const BREAKER_GAUGE = { closed: 0, half_open: 1, open: 2 } as const;

/** The body limit of the text endpoints: the gateway's 10 MiB plus room for JSON framing. */
const BODY_LIMIT_BYTES = 10 * 1024 * 1024 + 64 * 1024;

export interface TextComposition {
  app: Express;
  database: TextDatabase;
  runner: TextRunner;
  reconciler: Reconciler;
  /** This process's allowances; undefined when ALLOWANCES=off. */
  allowances: Allocator | undefined;
  catalog: CatalogCache;
  workerId: string;
  close(): Promise<void>;
}

/** What tests may replace; main.ts passes only the logger. */
export interface TextOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

/**
 * The composition root: the text service built from its settings, the same way for main.ts and the
 * tests. Connects to its database, the bus and billing; starts the outbox relay (hold commands to
 * billing), the catalog cache and the reconciler.
 */
export async function compose(config: TextConfig, overrides: TextOverrides): Promise<TextComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("text", config);
  const workerId = randomUUID();
  const metrics = new Metrics("text");
  const bus: Bus = await connectBus({
    url: config.RABBITMQ_URL,
    name: "text",
    topology: "await",
    logger,
    keys: auth.keys,
    commandSign: config.BUS_COMMAND_SIGN,
    registry: metrics.registry,
  });
  // billing-ledger declares its queue; hold commands wait in text's outbox until it has, never unroutable.
  bus.requireQueue(CommandQueues.billingHoldCommands);
  const database = createDatabase(config.TEXT_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) => logger.warn({ err }, "an idle database connection was lost"));
  const billingHttp = new InternalClient({ baseUrl: config.BILLING_LEDGER_URL, auth, audience: "billing-ledger" });
  // timeMethods: the benchmark's waterfall (METER_TIMINGS_DIR) times these steps; otherwise they are left as they are.
  const billing = timeMethods(new BillingClient(billingHttp), { placeHold: "hold" });
  const catalog = new CatalogCache(billing, config.CATALOG_REFRESH_MS, logger);
  // Hold commands go to billing over HTTP when the broker cannot take them (docs/api.md, "Allowances").
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus: new HoldCommandsAdapter(bus, billing, logger), logger });
  // A final outcome's hold command is published as soon as its commit is done (the relay's poll is the fallback).
  const repo = timeMethods(new TextRequestRepository(database.pool, (rows) => void relay.publishNow(rows)), { claim: "claim", finish: "finish" });
  // The database is recorded before any request, so every backup of it carries its incarnation (the restore point).
  const restorePoint = () => restorePointOf((sql) => database.pool.query(sql));
  await restorePoint();
  const allowanceRepo = new AllowanceRepository(database.pool, workerId, () => relay.kick());
  const allowances =
    config.ALLOWANCES === "on"
      ? new Allocator({
          store: allowanceRepo,
          grant: (req) => billing.grant(req),
          settings: {
            seconds: config.ALLOWANCE_SECONDS,
            minRequests: config.ALLOWANCE_MIN_REQUESTS,
            idleMs: config.ALLOWANCE_IDLE_MS,
            refusedBackoffMs: config.ALLOWANCE_REFUSED_BACKOFF_MS,
          },
          operation: "text",
          source: "text",
          logger,
        })
      : undefined;
  // Closing decisions a few times per idle period, so parked money comes back soon after it went idle.
  const closer = allowances
    ? new PeriodicPass(() => allowances.tick(), { name: "allowance closer", intervalMs: Math.max(50, Math.floor(config.ALLOWANCE_IDLE_MS / 4)), logger })
    : undefined;
  const health = sharedProviderHealth(database.pool, config, "TEXT", logger);
  const runner = new TextRunner({
    repo,
    billing,
    providerFor: (p) => timeMethods(createProvider(p, config.upstreamKeys), { complete: "upstream" }),
    logger,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    // Nothing to wake: the repository hands each final batch's commands to relay.publishNow itself.
    onOutbox: () => undefined,
    maxAttempts: config.TEXT_MAX_ATTEMPTS,
    upstreamRetryDelaysMs: retryDelaysOf(config, "TEXT"),
    parkBaseMs: config.TEXT_PARK_BASE_MS,
    allowances,
    routing: { health, metrics: routingMetricsOf(metrics, "text") },
  });
  const routingView = new RoutingViewService({ catalog, health, repo });
  // Read at each scrape from the shared table: every replica reports the same state.
  metrics.gauge(
    "text_provider_breaker_state",
    "circuit breaker of each provider of a model with several: 0 closed, 1 half-open, 2 open",
    ["provider"],
    async (g) => {
      const models = await routingView.providers().catch((e: unknown) => (logger.warn({ err: e }, "provider states not read for /metrics"), []));
      g.reset();
      for (const p of models.flatMap((m) => m.providers)) if (p.state) g.set({ provider: p.id }, BREAKER_GAUGE[p.state]);
    },
  );
  const reconciler = new Reconciler(repo, allowanceRepo, runner, logger, {
    workerId,
    intervalMs: config.RECONCILE_INTERVAL_MS,
    staleMs: config.WORKER_STALE_MS,
    leaseMs: config.TEXT_RECORD_LEASE_MS,
    retentionMs: config.IDEMPOTENCY_RETENTION_HOURS * 3_600_000,
  });
  await catalog.start({ bus, queue: "text.catalog-changed" });
  await reconciler.start();
  closer?.start();

  const app = createApp({
    auth,
    logger,
    metrics,
    requests: new TextRequestService({
      repo,
      runner,
      billing,
      allowances,
      catalog,
      keys: config.upstreamKeys,
      workerId,
      syncTimeoutMs: config.TEXT_SYNC_TIMEOUT_MS,
      leaseMs: config.TEXT_RECORD_LEASE_MS,
      logger,
    }),
    quotes: new QuoteService(catalog, config.DEFAULT_MAX_OUTPUT_TOKENS, config.upstreamKeys),
    audit: new HoldAuditService(repo, allowanceRepo, restorePoint),
    routing: routingView,
    defaultMaxTokens: config.DEFAULT_MAX_OUTPUT_TOKENS,
    bodyLimitBytes: BODY_LIMIT_BYTES,
    readiness: [
      // Its own database only: readiness that waited for billing-ledger (the catalog) would take every
      // replica out of service while billing rolls out. Until the catalog loads (it retries on its own
      // timer), requests are refused with 503 and nothing reserved.
      { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
      // ...and, on a broker billing-ledger never ran on, the bus topology it waits for.
      busTopologyReady(bus),
    ],
  });

  return {
    app,
    database,
    runner,
    reconciler,
    allowances,
    catalog,
    workerId,
    async close() {
      await stepOfStop("catalog.stop()", () => catalog.stop());
      await stepOfStop("runner.drain(10_000)", () => runner.drain(10_000));
      closer?.stop();
      // Every allowance of this process closing, and closed with its release now when nothing is in
      // flight on it; the rest are closed by another process's reconciler (this one retires below).
      await stepOfStop("allowances.stop()", () =>
        allowances?.stop().catch((e: unknown) => logger.warn({ err: e }, "allowances not closed at stop; left to the reconcilers")),
      );
      await stepOfStop("reconciler.stop()", () => reconciler.stop());
      await stepOfStop("relay.stop()", () => relay.stop());
      await stepOfStop("bus.close()", () => bus.close());
      await stepOfStop("billingHttp.close()", () => billingHttp.close());
      await stepOfStop("closeUpstreamAgents()", () => closeUpstreamAgents());
      await stepOfStop("database.close()", () => database.close());
    },
  };
}
