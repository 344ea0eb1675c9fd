import { serve } from "@meter/service-kit";
import { composeWorker } from "./composition";
import { loadConfig } from "./config";

/** The files worker: verification and retention (see composeWorker); its port serves only health and metrics. */
serve({
  name: "files-worker",
  loadConfig,
  port: (c) => c.FILES_WORKER_PORT,
  compose: (config, logger) => composeWorker(config, { logger }),
});
