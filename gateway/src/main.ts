import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadConfig } from "./config";

serve({
  name: "gateway",
  loadConfig,
  port: (c) => c.GATEWAY_PORT,
  internalPort: (c) => c.GATEWAY_INTERNAL_PORT,
  compose: (config, logger) => compose(config, { logger }),
});
