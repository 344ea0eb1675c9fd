import { randomUUID } from "node:crypto";
import type { Express } from "express";
import { createInternalAuth, stepOfStop, Metrics, type InternalAuth, type Logger } from "@meter/service-kit";
import { GatewayPublicApi } from "./adapters/public-api.adapter";
import { createApp } from "./app";
import { publicBaseUrlOf, type McpConfig } from "./config";
import { createDatabase, type McpDatabase } from "./db";
import { LeaseRepository } from "./repositories/lease.repository";
import { ToolResultRepository } from "./repositories/tool-result.repository";
import { CallLimiter } from "./services/call-limiter";
import { StatelessMcp } from "./services/stateless-mcp.service";
import { ToolCatalog } from "./services/tool-catalog";
import { ToolInvoker } from "./services/tool-invoker.service";

export interface McpComposition {
  app: Express;
  database: McpDatabase;
  close(): Promise<void>;
}

/** What tests may replace; main.ts passes only the logger. */
export interface McpOverrides {
  logger: Logger;
  auth?: InternalAuth;
}

/**
 * The composition root: the MCP service built from its settings, the same way for main.ts and the
 * tests. It owns a database (the shared leases of running tool calls, oversized results) and a client of the public API;
 * no bus, no background work besides the lease renewals of calls in progress.
 */
export async function compose(config: McpConfig, overrides: McpOverrides): Promise<McpComposition> {
  const { logger } = overrides;
  const auth = overrides.auth ?? createInternalAuth("mcp", config);
  const processId = randomUUID();
  const database = createDatabase(config.MCP_DATABASE_URL, config.DATABASE_POOL_SIZE, (err) => logger.warn({ err }, "an idle database connection was lost"));
  const api = new GatewayPublicApi(config.GATEWAY_URL, config.MCP_API_TIMEOUT_MS);
  const limiter = new CallLimiter(
    new LeaseRepository(database.pool),
    {
      processId,
      perProcess: config.MCP_MAX_ACTIVE_CALLS_PER_PROCESS,
      perOrganization: config.MCP_MAX_ACTIVE_CALLS_PER_ORGANIZATION,
      leaseTtlMs: config.MCP_LEASE_TTL_MS,
    },
    logger,
  );
  const catalog = new ToolCatalog({
    api,
    jobWait: { maxWaitMs: config.MCP_JOB_WAIT_MS, firstPollMs: 250, maxPollMs: 2_000 },
    inlineResultBytes: config.MCP_INLINE_RESULT_BYTES,
  });
  const results = new ToolResultRepository(database.pool, config.MCP_RESULT_TTL_MS);
  const invoker = new ToolInvoker({ limiter, results, resultLimitBytes: config.MCP_RESULT_LIMIT_BYTES, logger });

  const app = createApp({
    auth,
    logger,
    metrics: new Metrics("mcp"),
    catalog,
    invoker,
    stateless: new StatelessMcp({ catalog, invoker }),
    results,
    bodyLimitBytes: config.MCP_BODY_LIMIT_BYTES,
    allowedOrigins: config.MCP_ALLOWED_ORIGINS,
    publicBaseUrl: publicBaseUrlOf(config),
    readiness: [{ name: "database", check: async () => void (await database.pool.query("SELECT 1")) }],
  });

  return {
    app,
    database,
    async close() {
      await stepOfStop("api.close()", () => api.close());
      await stepOfStop("database.close()", () => database.close());
    },
  };
}
