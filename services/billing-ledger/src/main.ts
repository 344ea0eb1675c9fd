import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadConfig } from "./config";

serve({
  name: "billing-ledger",
  loadConfig,
  port: (c) => c.BILLING_LEDGER_PORT,
  compose: (config, logger) => compose(config, { logger }),
});
