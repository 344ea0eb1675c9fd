import type { Express } from "express";
import { connectBus, registerUnroutedGauge, startOutboxRelay } from "@meter/messaging";
import { createInternalAuth, Metrics, rawSqlOf, type InternalAuth, type Logger } from "@meter/service-kit";
import { createHoldOwners, type HoldOwners } from "./adapters/hold-owners.adapter";
import { createCabinetServices, type CabinetOptions, type CabinetServices } from "./services/cabinet.services";
import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN } from "@meter/contracts";
import { createApp } from "./app";
import type { BillingConfig } from "./config";
import { startHoldCommandConsumer } from "./consumers/hold-commands.consumer";
import { createDatabase, type BillingDatabase } from "./db";
import { HoldOpsRepository } from "./repositories/hold-ops.repository";
import { HoldRepository } from "./repositories/hold.repository";
import { AccountService } from "./services/account.service";
import { ApiKeyService } from "./services/api-key.service";
import { CatalogService } from "./services/catalog.service";
import { HoldAuditService } from "./services/hold-audit.service";
import { HoldExpiryService } from "./services/hold-expiry.service";
import { HoldService } from "./services/hold.service";
import { KeyUsageService } from "./services/key-usage.service";

export interface BillingServices {
  holdReads: HoldRepository;
  holds: HoldService;
  accounts: AccountService;
  keys: ApiKeyService;
  keyUsage: KeyUsageService;
  catalog: CatalogService;
  cabinet: CabinetServices;
}

export interface BillingServicesOptions {
  /** BUDGET_TIMEZONE. */
  timezone: string;
  metrics: Metrics;
  /** HOLD_LOCK_TIMEOUT_MS. */
  lockTimeoutMs?: number;
  /** Runs of one hold batch in all, after deadlocks or lock timeouts. */
  holdAttempts?: number;
  /** UPSTREAM_KEY_ENV_PATTERN. */
  upstreamKeyEnvPattern?: RegExp;
  /** Tests set the time of hold operations and budget reads (to cross midnight); otherwise the database's now(). */
  clock?: () => Date;
  /** The web cabinet's sessions, invitations and sign-in limits (CABINET_* settings); defaults otherwise. */
  cabinet?: CabinetOptions;
}

/** billing's rules over its database (the CLI builds them alone, without the bus). */
export function createBillingServices(database: BillingDatabase, opts: BillingServicesOptions): BillingServices {
  const db = database.prisma;
  const holdOps = new HoldOpsRepository(database.pool, {
    timezone: opts.timezone,
    lockTimeoutMs: opts.lockTimeoutMs ?? 1_000,
    attempts: opts.holdAttempts ?? 3,
    clock: opts.clock,
    metrics: {
      transactions: opts.metrics.counter("billing_hold_transactions_total", "Transactions of hold operations (one apply_hold_ops call each)"),
      failures: opts.metrics.counter("billing_hold_transaction_failures_total", "Failed transactions of hold operations, by reason", ["reason"]),
    },
  });
  const holdReads = new HoldRepository(db);
  const accounts = new AccountService(db);
  const keys = new ApiKeyService(db);
  const keyUsage = new KeyUsageService(db, opts.timezone, opts.clock);
  return {
    holdReads,
    holds: new HoldService(holdOps, holdReads),
    accounts,
    keys,
    keyUsage,
    catalog: new CatalogService(db, opts.upstreamKeyEnvPattern ?? new RegExp(DEFAULT_UPSTREAM_KEY_ENV_PATTERN)),
    cabinet: createCabinetServices(database, { accounts, keys, keyUsage, timezone: opts.timezone, clock: opts.clock }, opts.cabinet),
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
 * hold expiry sweep and the hold audit.
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
  const services = createBillingServices(database, {
    timezone: config.BUDGET_TIMEZONE,
    metrics,
    lockTimeoutMs: config.HOLD_LOCK_TIMEOUT_MS,
    upstreamKeyEnvPattern: config.UPSTREAM_KEY_ENV_PATTERN,
    cabinet: {
      sessionTtlMs: config.CABINET_SESSION_TTL_HOURS * 3_600_000,
      invitationTtlMs: config.CABINET_INVITATION_TTL_HOURS * 3_600_000,
      throttle: {
        perAccount: config.CABINET_SIGN_IN_MAX_FAILURES_PER_ACCOUNT,
        perAddress: config.CABINET_SIGN_IN_MAX_FAILURES_PER_ADDRESS,
        windowMs: config.CABINET_SIGN_IN_WINDOW_S * 1000,
      },
    },
    ...(overrides.clock ? { clock: overrides.clock } : {}),
    ...(overrides.holdAttempts !== undefined ? { holdAttempts: overrides.holdAttempts } : {}),
  });

  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "billing-ledger", logger, keys: auth.keys, registry: metrics.registry });
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
  const owners = overrides.owners ?? createHoldOwners(auth, { text: config.TEXT_URL, "media-jobs": config.MEDIA_JOBS_URL });
  const audit = new HoldAuditService(services.holdReads, services.holds, owners, { afterMs: config.HOLD_AUDIT_AFTER_MS }, logger, {
    verdicts: metrics.counter("billing_hold_audit_verdicts_total", "Hold audit verdicts of owners, by source and verdict", ["source", "verdict"]),
    unreachable: metrics.counter("billing_hold_audit_unreachable_total", "Hold audit calls whose owner could not be asked", ["source"]),
  }).start(config.HOLD_AUDIT_INTERVAL_MS);

  const app = createApp({
    auth,
    logger,
    metrics,
    services,
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
      await Promise.all([expiry.stop(), audit.stop()]);
      await consumer.stop();
      await relay.stop();
      await bus.close();
      await owners.close();
      await database.close();
    },
  };
}
