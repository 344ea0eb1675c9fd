import { createServer } from "node:http";
import { CommandQueues } from "@meter/contracts";
import { connectBus, startOutboxRelay } from "@meter/messaging";
import { closeServer, createLogger, listen, Metrics, runService } from "@meter/service-kit";
import { S3ObjectStore } from "./adapters/s3-object-store";
import { createApp, createFilesServices } from "./app";
import { loadConfig, objectStoreOptionsOf, policyOf, uploadSecretOf } from "./config";
import { createDb } from "./db";
import { systemClock } from "./policy";
import { filesReadiness } from "./readiness";
import { UploadLinkService } from "./services/upload-link.service";

/** The files API process. Verification and retention run in worker.ts. */
const logger = createLogger("files");

/** Long enough for a maximum-size upload over a slow link; Node's default (5 min) would cut it off. */
const REQUEST_TIMEOUT_MS = 30 * 60_000;

runService(logger, async () => {
  const config = loadConfig();
  const db = createDb(config.FILES_DATABASE_URL, config.DATABASE_POOL_SIZE);
  const store = new S3ObjectStore(objectStoreOptionsOf(config));
  const bus = await connectBus({ url: config.RABBITMQ_URL, name: "files", logger });
  // A command queue: declared by its publisher too, so a completion before the worker's first start waits there.
  await bus.declareQueue(CommandQueues.filesVerification);
  const relay = startOutboxRelay({ db, bus, logger });

  const services = createFilesServices({
    db,
    store,
    links: new UploadLinkService(uploadSecretOf(config)),
    policy: policyOf(config),
    clock: systemClock,
    logger,
    kickOutbox: () => relay.kick(),
  });
  const app = createApp({
    internalSecret: config.INTERNAL_SECRET,
    logger,
    metrics: new Metrics("files"),
    services,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    readiness: filesReadiness(db, store, bus),
  });
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  const port = await listen(server, config.FILES_PORT, config.HOST);
  logger.info({ port }, "files listening");

  return {
    close: async () => {
      await closeServer(server);
      await relay.stop();
      await bus.close();
      await db.$disconnect();
    },
  };
});
