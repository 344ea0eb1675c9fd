import type { Express } from "express";
import { createServiceApp, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import { mcpRoutes, type McpRoutesDeps } from "./http/mcp.routes";

export interface AppDeps extends McpRoutesDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  readiness: ReadinessCheck[];
}

/** One door: key holders through the gateway, which forwards their own Authorization for the tools' calls back. */
export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/mcp", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }));
    app.use(mcpRoutes(deps));
  });
}
