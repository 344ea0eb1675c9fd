import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import { adminRoutes, operatorOnly } from "./http/admin.routes";
import { internalRoutes } from "./http/internal.routes";
import { textRoutes } from "./http/text.routes";
import type { HoldAuditService } from "./services/hold-audit.service";
import type { QuoteService } from "./services/quote.service";
import type { RoutingViewService } from "./services/routing-view.service";
import type { TextRequestService } from "./services/text-request.service";

export interface AppDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  requests: TextRequestService;
  quotes: QuoteService;
  audit: HoldAuditService;
  /** The operator's view of upstream routing (`/admin/v1/text`). */
  routing: RoutingViewService;
  defaultMaxTokens: number;
  bodyLimitBytes: number;
  readiness: ReadinessCheck[];
}

/** Three doors: key holders and the operator through the gateway, and billing-ledger's hold audit. */
export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/v1", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }), jsonBody({ limit: deps.bodyLimitBytes }));
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["billing-ledger"] }), jsonBody({ limit: "1mb" }));
    app.use("/admin/v1", requireIdentity(deps.auth, { kinds: ["admin", "session"], from: ["gateway"] }), operatorOnly, adminRoutes({ routing: deps.routing }));
    app.use(textRoutes({ requests: deps.requests, quotes: deps.quotes, defaultMaxTokens: deps.defaultMaxTokens }));
    app.use(internalRoutes({ audit: deps.audit }));
  });
}
