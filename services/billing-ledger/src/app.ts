import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import type { BillingServices } from "./composition";
import { adminRoutes } from "./http/admin.routes";
import { cabinetAdminRoutes } from "./http/cabinet-admin.routes";
import { cabinetInternalRoutes } from "./identity/cabinet-internal.routes";
import { cabinetRoutes } from "./http/cabinet.routes";
import { operatorOnly } from "./http/session-identity";
import { internalRoutes } from "./http/internal.routes";
import { publicRoutes } from "./catalog/public.routes";

export interface AppDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  services: BillingServices;
  readiness: ReadinessCheck[];
}

export function createApp(deps: AppDeps): Express {
  const body = jsonBody({ limit: "1mb" });
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    // The operator: with ADMIN_TOKEN (admin) or signed in to the web cabinet (an operator session).
    app.use(
      "/admin/v1",
      requireIdentity(deps.auth, { kinds: ["admin", "session"], from: ["gateway"] }),
      operatorOnly,
      body,
      adminRoutes(deps.services),
      cabinetAdminRoutes(deps.services.cabinet),
    );
    // Internal routes carry their full paths (the contracts' endpoints); the door guards the prefix.
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["gateway", "text", "media-jobs", "media-jobs-worker"] }), body);
    app.use(internalRoutes(deps.services));
    app.use(cabinetInternalRoutes(deps.services.cabinet));
    app.use("/cabinet/v1", requireIdentity(deps.auth, { kinds: ["session"], from: ["gateway"] }), body, cabinetRoutes(deps.services.cabinet));
    app.use("/v1", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }), publicRoutes(deps.services));
  });
}
