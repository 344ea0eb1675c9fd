import { serve } from "@meter/service-kit";
import { loadConfig } from "./config";
import { composeWorker } from "./composition";

/**
 * The media-jobs worker: runs the jobs of the `media-jobs.jobs` queue and reconciles what crashes leave
 * behind. Any number may run; the queue and the guarded claim share the work. It serves only /healthz,
 * /readyz and /metrics, on MEDIA_JOBS_WORKER_PORT, for probes and scraping.
 */
serve({
  name: "media-jobs-worker",
  loadConfig,
  port: (c) => c.MEDIA_JOBS_WORKER_PORT,
  compose: (config, logger) => composeWorker(config, { logger }),
});
