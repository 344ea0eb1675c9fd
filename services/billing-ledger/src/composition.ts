import type { Express } from "express";
import { connectBus, registerUnroutedGauge, startOutboxRelay } from "@meter/messaging";
import { createInternalAuth, parseGrantKeys, stepOfStop, Metrics, rawSqlOf, type InternalAuth, type Logger } from "@meter/service-kit";
import { createHoldOwners, type HoldOwners } from "./holds/hold-owners.adapter";
import { createCabinetServices, type CabinetOptions } from "./cabinet.services";
import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN } from "@meter/contracts";
import { createApp, type BillingServices } from "./app";
import type { BillingConfig } from "./config";
import { startHoldCommandConsumer } from "./holds/hold-commands.consumer";
import { createDatabase, type BillingDatabase } from "./db";
import { CreditRepository } from "./holds/credit.repository";
import { HoldOpsRepository } from "./holds/hold-ops.repository";
import { KeyOrganizations } from "./keys/key-organizations";
import { HoldRepository } from "./holds/hold.repository";
import { AccountRepository } from "./accounts/account.repository";
import { AccountService } from "./accounts/account.service";
import { ApiKeyRepository } from "./keys/api-key.repository";
import { ApiKeyService } from "./keys/api-key.service";
import { CatalogRepository } from "./catalog/catalog.repository";
import { CatalogService } from "./catalog/catalog.service";
import { HoldAuditService } from "./holds/hold-audit.service";
import { HoldExpiryService } from "./holds/hold-expiry.service";
import { BooksCrossCheckService, type CrossCheckMetrics } from "./holds/books-cross-check.service";
import { HoldService } from "./holds/hold.service";
import { GrantSignatures } from "./holds/grant-signatures";
import { KeyUsageService } from "./keys/key-usage.service";
import { WebhookRepository } from "./webhooks/webhook.repository";
import { WebhookService } from "./webhooks/webhook.service";
import { WebhookDeliveryService } from "./webhooks/webhook-delivery.service";
import { createWebhookSender } from "./webhooks/webhook-sender.adapter";
import type { OutboundPolicy } from "./webhooks/webhook-url";
import type { AllowanceRecall } from "./keys/api-key.service";
import { allowanceRecallVia } from "./keys/allowance-recall.adapter";
import { KeyExpiryService } from "./keys/key-expiry.service";
import { DirectoryRepository } from "./accounts/directory.repository";
import { MemberScope } from "./accounts/member-scope";
import { PgRequestLogStore } from "./request-log/pg-request-log.store";
import { PgRequestAnalyticsStore } from "./request-log/pg-request-analytics.store";
import { RequestLogRetention } from "./request-log/request-log-retention.service";
import { RequestLogRollup } from "./request-log/request-log-rollup.service";
import { RequestLogService } from "./request-log/request-log.service";
import { UsageAnalyticsService } from "./request-log/usage-analytics.service";
import { KeyDetailService } from "./keys/key-detail.service";

/** What createBillingServices builds; app.ts declares it, as what its routes are given. */
export type { BillingServices };

export interface BillingServicesOptions {
  /** BUDGET_TIMEZONE. */
  timezone: string;
  metrics: Metrics;
  /** HOLD_LOCK_TIMEOUT_MS. */
  lockTimeoutMs?: number;
  /** ALLOWANCE_MAX_SHARE and ALLOWANCE_RETRY_AFTER_S. */
  allowances?: { maxShare: number; retryAfterS: number };
  /** Runs of one hold batch in all, after deadlocks or lock timeouts. */
  holdAttempts?: number;
  /** HOLD_BATCH_TRANSACTIONS ("batch" by default). */
  holdBatchTransactions?: "batch" | "organization";
  /** UPSTREAM_KEY_ENV_PATTERN. */
  upstreamKeyEnvPattern?: RegExp;
  /** Tests set the time of hold operations and budget reads (to cross midnight); otherwise the database's now(). */
  clock?: () => Date;
  /** The web cabinet's sessions, invitations and sign-in limits (CABINET_* settings); defaults otherwise. */
  cabinet?: CabinetOptions;
  /** Where webhooks may go (NODE_ENV, WEBHOOK_ALLOW_PRIVATE_ADDRESSES); defaults: http allowed, public addresses only. */
  webhooks?: OutboundPolicy;
  /** Calls a key's open allowances back (a lowered budget, an expiry); without it they return when idle. */
  recall?: AllowanceRecall;
  /** What placements and grants are signed with, and the books cross-check checks (GRANT_SIGNING_KEY, GRANT_PUBLIC_KEYS). */
  grants: GrantSignatures;
}

/** billing's rules over its database (the CLI builds them alone, without the bus). */
export function createBillingServices(database: BillingDatabase, opts: BillingServicesOptions): BillingServices {
  const db = database.prisma;
  const keyOrganizations = new KeyOrganizations(database.pool);
  const holdOps = new HoldOpsRepository(
    database.pool,
    {
      timezone: opts.timezone,
      lockTimeoutMs: opts.lockTimeoutMs ?? 1_000,
      allowanceMaxShare: opts.allowances?.maxShare ?? 0.25,
      allowanceRetryAfterS: opts.allowances?.retryAfterS ?? 5,
      attempts: opts.holdAttempts ?? 3,
      perOrganization: opts.holdBatchTransactions === "organization",
      clock: opts.clock,
      metrics: {
        transactions: opts.metrics.counter("billing_hold_transactions_total", "Transactions of hold operations (one apply_hold_ops call each)"),
        failures: opts.metrics.counter("billing_hold_transaction_failures_total", "Failed transactions of hold operations, by reason", ["reason"]),
      },
    },
    keyOrganizations,
  );
  const holdReads = new HoldRepository(db);
  const accounts = new AccountService(new AccountRepository(db), new CreditRepository(db));
  const keyRows = new ApiKeyRepository(db);
  const keys = new ApiKeyService(keyRows, opts.recall);
  const keyUsage = new KeyUsageService(keyRows, opts.timezone, opts.clock);
  const webhookRows = new WebhookRepository(db);
  const scope = new MemberScope(new DirectoryRepository(db));
  const figures = new PgRequestAnalyticsStore(database.pool, opts.timezone);
  const analytics = new UsageAnalyticsService(figures, scope, accounts, opts.timezone, opts.clock);
  return {
    holdReads,
    holds: new HoldService(holdOps, holdReads, opts.grants),
    accounts,
    keys,
    keyUsage,
    keyDetail: new KeyDetailService(keys, keyUsage, analytics),
    catalog: new CatalogService(new CatalogRepository(db), opts.upstreamKeyEnvPattern ?? new RegExp(DEFAULT_UPSTREAM_KEY_ENV_PATTERN)),
    cabinet: createCabinetServices(database, { accounts, keys, keyUsage, analytics, scope, timezone: opts.timezone, clock: opts.clock }, opts.cabinet),
    webhookRows,
    webhooks: new WebhookService(webhookRows, opts.webhooks ?? { httpsOnly: false, allowPrivate: false }),
    requestLog: new RequestLogService(new PgRequestLogStore(database.pool, opts.timezone, keyOrganizations), figures, scope, accounts),
    analytics,
  };
}

export interface BillingComposition {
  app: Express;
  database: BillingDatabase;
  services: BillingServices;
  metrics: Metrics;
  auth: InternalAuth;
  close(): Promise<void>;
}

/** What tests may replace; main.ts passes only the logger. */
export interface BillingOverrides {
  logger: Logger;
  auth?: InternalAuth;
  /** The time of hold operations and budget reads (a test crosses midnight); otherwise the database's now(). */
  clock?: () => Date;
  /** Runs of one hold batch in all, after deadlocks or lock timeouts. */
  holdAttempts?: number;
  /** The owners the hold audit asks (a test gives its own). */
  owners?: HoldOwners;
}

/**
 * The composition root: billing-ledger built from its settings, the same way for main.ts and the
 * tests. Its database, the bus (hold commands in, key and catalog events out through the outbox), the
 * hold expiry sweep, the hold audit and the books cross-check.
 */
export async function compose(config: BillingConfig, overrides: BillingOverrides): Promise<BillingComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("billing-ledger", config);
  const database = createDatabase(config.BILLING_LEDGER_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) =>
    logger.warn({ err }, "an idle database connection was lost"),
  );
  const db = database.prisma;
  await db.$queryRawUnsafe("SELECT now() AT TIME ZONE $1", config.BUDGET_TIMEZONE).catch(async (e: unknown) => {
    await database.close();
    throw new Error(`BUDGET_TIMEZONE "${config.BUDGET_TIMEZONE}" is not a time zone PostgreSQL knows`, { cause: e });
  });
  const metrics = new Metrics("billing-ledger");
  const owners = overrides.owners ?? createHoldOwners(auth, { text: config.TEXT_URL, "media-jobs": config.MEDIA_JOBS_URL });
  const grants = new GrantSignatures(parseGrantKeys(config.GRANT_SIGNING_KEY, config.GRANT_PUBLIC_KEYS), config.HOLD_EXPIRY_HOURS * 3_600_000);
  const services = createBillingServices(database, {
    grants,
    recall: allowanceRecallVia(owners),
    timezone: config.BUDGET_TIMEZONE,
    metrics,
    lockTimeoutMs: config.HOLD_LOCK_TIMEOUT_MS,
    holdBatchTransactions: config.HOLD_BATCH_TRANSACTIONS,
    allowances: { maxShare: config.ALLOWANCE_MAX_SHARE, retryAfterS: config.ALLOWANCE_RETRY_AFTER_S },
    upstreamKeyEnvPattern: config.UPSTREAM_KEY_ENV_PATTERN,
    webhooks: { httpsOnly: config.NODE_ENV === "production", allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_ADDRESSES },
    cabinet: {
      sessionTtlMs: config.CABINET_SESSION_TTL_HOURS * 3_600_000,
      invitationTtlMs: config.CABINET_INVITATION_TTL_HOURS * 3_600_000,
      throttle: {
        freePerAccountAddress: config.CABINET_SIGN_IN_FREE_FAILURES,
        freePerAddress: config.CABINET_SIGN_IN_FREE_FAILURES_PER_ADDRESS,
        maxDelayMs: config.CABINET_SIGN_IN_MAX_DELAY_S * 1000,
        windowMs: config.CABINET_SIGN_IN_WINDOW_S * 1000,
      },
    },
    ...(overrides.clock ? { clock: overrides.clock } : {}),
    ...(overrides.holdAttempts !== undefined ? { holdAttempts: overrides.holdAttempts } : {}),
  });

  // billing-ledger owns the bus topology: it declares the exchanges and the unrouted queue, every other deployable waits for them.
  const bus = await connectBus({
    url: config.RABBITMQ_URL,
    name: "billing-ledger",
    topology: "declare",
    logger,
    keys: auth.keys,
    commandSign: config.BUS_COMMAND_SIGN,
    registry: metrics.registry,
  });
  const relay = startOutboxRelay({ db: rawSqlOf(database.pool), bus, logger });
  // Billing publishes events (revoked keys, catalog changes) that no queue may be bound to yet.
  registerUnroutedGauge(bus, metrics.registry);
  const consumer = await startHoldCommandConsumer(
    bus,
    services.holds,
    logger,
    metrics.counter("billing_hold_commands_total", "Settle and release commands consumed, by outcome", ["outcome"]),
  );
  const expiry = new HoldExpiryService(
    services.holdReads,
    services.holds,
    config.HOLD_EXPIRY_HOURS,
    logger,
    metrics.counter("billing_holds_expired_total", "Holds expired without being settled or released", ["source"]),
  ).start(config.HOLD_SWEEP_INTERVAL_MS);
  const keyExpiry = new KeyExpiryService(services.keys, logger).start(config.KEY_EXPIRY_SWEEP_INTERVAL_MS);
  const audit = new HoldAuditService(services.holdReads, services.holds, owners, { afterMs: config.HOLD_AUDIT_AFTER_MS }, logger, {
    verdicts: metrics.counter("billing_hold_audit_verdicts_total", "Hold audit verdicts of owners, by source and verdict", ["source", "verdict"]),
    unreachable: metrics.counter("billing_hold_audit_unreachable_total", "Hold audit calls whose owner could not be asked", ["source"]),
  }).start(config.HOLD_AUDIT_INTERVAL_MS);
  const figures = new PgRequestAnalyticsStore(database.pool, config.BUDGET_TIMEZONE);
  const retention = new RequestLogRetention(
    new PgRequestLogStore(database.pool, config.BUDGET_TIMEZONE, new KeyOrganizations(database.pool)),
    figures,
    logger,
  ).start(config.REQUEST_LOG_RETENTION_INTERVAL_MS);
  const rollup = new RequestLogRollup(figures, logger).start(config.REQUEST_LOG_ROLLUP_INTERVAL_MS);
  const crossCheck = new BooksCrossCheckService(services.holdReads, services.holds, owners, grants, logger, crossCheckMetrics(metrics));
  const crossCheckPass = crossCheck.start(config.BOOKS_CROSS_CHECK_INTERVAL_MS);
  const webhookWorker = new WebhookDeliveryService(
    services.webhookRows,
    createWebhookSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_ADDRESSES }),
    {
      retry: { baseMs: config.WEBHOOK_RETRY_BASE_MS, maxDelayMs: config.WEBHOOK_RETRY_MAX_DELAY_MS, windowMs: config.WEBHOOK_RETRY_WINDOW_HOURS * 3_600_000 },
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      pollMs: config.WEBHOOK_POLL_INTERVAL_MS,
    },
    logger,
    metrics.counter("billing_webhook_attempts_total", "Webhook delivery attempts, by outcome (succeeded, retrying, failed)", ["outcome"]),
  ).start();

  const app = createApp({
    auth,
    logger,
    metrics,
    services,
    crossCheck,
    readiness: [
      { name: "database", check: async () => void (await database.pool.query("SELECT 1")) },
      {
        name: "rabbitmq",
        check: async () => {
          if (!bus.isConnected()) throw new Error("not connected");
        },
      },
    ],
  });

  return {
    app,
    database,
    services,
    metrics,
    auth,
    async close() {
      await stepOfStop("periodic passes", () =>
        Promise.all([expiry.stop(), keyExpiry.stop(), audit.stop(), crossCheckPass.stop(), webhookWorker.stop(), retention.stop(), rollup.stop()]),
      );
      await stepOfStop("consumer.stop()", () => consumer.stop());
      await stepOfStop("relay.stop()", () => relay.stop());
      await stepOfStop("bus.close()", () => bus.close());
      await stepOfStop("owners.close()", () => owners.close());
      await stepOfStop("database.close()", () => database.close());
    },
  };
}

/** The books cross-check's counters (one set, for the periodic pass and the operator's runs). */
function crossCheckMetrics(metrics: Metrics): CrossCheckMetrics {
  return {
    differences: metrics.counter(
      "billing_books_cross_check_differences_total",
      "Holds on which an owner's final record and billing's record differ, by source and kind",
      ["source", "kind"],
    ),
    repaired: metrics.counter("billing_books_cross_check_repaired_total", "Differences the books cross-check repaired, by source and kind", ["source", "kind"]),
  };
}
