import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import { internalRoutes } from "./http/internal.routes";
import { textRoutes } from "./http/text.routes";
import type { HoldAuditService } from "./services/hold-audit.service";
import type { QuoteService } from "./services/quote.service";
import type { TextRequestService } from "./services/text-request.service";

export interface AppDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  requests: TextRequestService;
  quotes: QuoteService;
  audit: HoldAuditService;
  defaultMaxTokens: number;
  bodyLimitBytes: number;
  readiness: ReadinessCheck[];
}

/** Two doors: key holders through the gateway, and billing-ledger's hold audit. */
export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/v1", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }), jsonBody({ limit: deps.bodyLimitBytes }));
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["billing-ledger"] }), jsonBody({ limit: "1mb" }));
    app.use(textRoutes({ requests: deps.requests, quotes: deps.quotes, defaultMaxTokens: deps.defaultMaxTokens }));
    app.use(internalRoutes({ audit: deps.audit }));
  });
}
