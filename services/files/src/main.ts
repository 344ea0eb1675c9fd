import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadApiConfig } from "./config";

/** The files API process. Verification and retention run in worker.ts. */
serve({
  name: "files",
  loadConfig: loadApiConfig,
  port: (c) => c.FILES_PORT,
  // Long enough for a maximum-size upload over a slow link; Node's default (5 min) would cut it off.
  requestTimeoutMs: () => 30 * 60_000,
  compose: (config, logger) => compose(config, { logger }),
});
