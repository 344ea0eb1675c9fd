import type { Express } from "express";
import { createServiceApp, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import type { ResultStore } from "./domain/stored-result";
import { mcpRoutes, type McpRoutesDeps } from "./http/mcp.routes";
import { resultsRoutes } from "./http/results.routes";

export interface AppDeps extends McpRoutesDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  readiness: ReadinessCheck[];
  results: ResultStore;
}

/** One door: key holders through the gateway, which forwards their own Authorization for the tools' calls back, and the downloads of oversized results. */
export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/mcp", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }));
    app.use("/v1/mcp/results", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }));
    app.use(mcpRoutes(deps));
    app.use(resultsRoutes(deps));
  });
}
