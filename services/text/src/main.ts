import { createServer } from "node:http";
import { connectBus } from "@meter/messaging";
import { closeServer, createLogger, listen, runService } from "@meter/service-kit";
import { loadConfig } from "./config";
import { createTextService } from "./text-service";

const logger = createLogger("text");

runService(logger, async () => {
  const config = loadConfig();
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "text", logger });
  const text = await createTextService({
    databaseUrl: config.TEXT_DATABASE_URL,
    databasePoolSize: config.DATABASE_POOL_SIZE,
    billingUrl: config.BILLING_LEDGER_URL,
    internalSecret: config.INTERNAL_SECRET,
    logger,
    bus,
    env: process.env,
    syncTimeoutMs: config.TEXT_SYNC_TIMEOUT_MS,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    defaultMaxTokens: config.DEFAULT_MAX_OUTPUT_TOKENS,
    catalogRefreshMs: config.CATALOG_REFRESH_MS,
    reconcileIntervalMs: config.RECONCILE_INTERVAL_MS,
    workerStaleMs: config.WORKER_STALE_MS,
    retentionHours: config.IDEMPOTENCY_RETENTION_HOURS,
  });
  const server = createServer(text.app);
  server.keepAliveTimeout = 65_000;
  // A request may wait the whole synchronous window; the socket must outlive it.
  server.requestTimeout = config.TEXT_SYNC_TIMEOUT_MS + 30_000;
  const port = await listen(server, config.TEXT_PORT, config.HOST);
  logger.info({ port }, "text listening");
  return {
    close: async () => {
      await closeServer(server);
      await text.close();
      await bus.close();
    },
  };
});
