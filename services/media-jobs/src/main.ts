import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadConfig } from "./config";

serve({
  name: "media-jobs",
  loadConfig,
  port: (c) => c.MEDIA_JOBS_PORT,
  compose: (config, logger) => compose(config, { logger }),
});
