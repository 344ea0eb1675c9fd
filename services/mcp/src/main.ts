import { serve } from "@meter/service-kit";
import { compose } from "./composition";
import { loadConfig } from "./config";

serve({
  name: "mcp",
  loadConfig,
  port: (c) => c.MCP_PORT,
  // A tool call may wait for a text answer (up to its synchronous window) or a job; the socket must outlive it.
  requestTimeoutMs: (c) => c.MCP_API_TIMEOUT_MS + c.MCP_JOB_WAIT_MS + 30_000,
  compose: (config, logger) => compose(config, { logger }),
});
