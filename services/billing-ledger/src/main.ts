import { createServer } from "node:http";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { closeServer, createLogger, listen, Metrics, runService } from "@meter/service-kit";
import { loadConfig } from "./config";
import { createDatabase } from "./db";
import { createApp, createBillingServices } from "./app";
import { startHoldCommandConsumer } from "./consumers/hold-commands.consumer";
import { HoldExpiryService } from "./services/hold-expiry.service";

const logger = createLogger("billing-ledger");

runService(logger, async () => {
  const config = loadConfig();
  const database = createDatabase(config.BILLING_LEDGER_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) =>
    logger.warn({ err }, "an idle database connection was lost"),
  );
  const db = database.prisma;
  await db.$queryRawUnsafe("SELECT now() AT TIME ZONE $1", config.BUDGET_TIMEZONE).catch((e: unknown) => {
    throw new Error(`BUDGET_TIMEZONE "${config.BUDGET_TIMEZONE}" is not a time zone PostgreSQL knows`, { cause: e });
  });
  const metrics = new Metrics("billing-ledger");
  const services = createBillingServices(database, config.BUDGET_TIMEZONE);

  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "billing-ledger", logger });
  const relay = startOutboxRelay({ db, bus, logger });
  const consumer = await startHoldCommandConsumer(bus, services.holds, logger);
  const expiry = new HoldExpiryService(
    services.holdReads,
    services.holds,
    config.HOLD_EXPIRY_HOURS,
    logger,
    metrics.counter("billing_holds_expired_total", "Holds expired without being settled or released", ["source"]),
  ).start(config.HOLD_SWEEP_INTERVAL_MS);

  const app = createApp({
    internalSecret: config.INTERNAL_SECRET,
    logger,
    metrics,
    services,
    readiness: [
      { name: "database", check: async () => void (await db.$queryRawUnsafe("SELECT 1")) },
      {
        name: "rabbitmq",
        check: async () => {
          if (!bus.isConnected()) throw new Error("not connected");
        },
      },
    ],
  });
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, config.BILLING_LEDGER_PORT, config.HOST);
  logger.info({ port }, "billing-ledger listening");

  return {
    close: async () => {
      expiry.stop();
      await closeServer(server);
      await consumer.stop();
      await relay.stop();
      await bus.close();
      await database.close();
    },
  };
});
