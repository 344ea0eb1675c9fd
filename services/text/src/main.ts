import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadConfig } from "./config";

serve({
  name: "text",
  loadConfig,
  port: (c) => c.TEXT_PORT,
  // A request may wait the whole synchronous window; the socket must outlive it.
  requestTimeoutMs: (c) => c.TEXT_SYNC_TIMEOUT_MS + 30_000,
  compose: (config, logger) => compose(config, { logger }),
});
