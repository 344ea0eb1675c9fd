import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import type { Database } from "./db";
import { HoldOpsRepository } from "./repositories/hold-ops.repository";
import { HoldRepository } from "./repositories/hold.repository";
import { AccountService } from "./services/account.service";
import { ApiKeyService } from "./services/api-key.service";
import { CatalogService } from "./services/catalog.service";
import { HoldService } from "./services/hold.service";
import { adminRoutes } from "./http/admin.routes";
import { internalRoutes } from "./http/internal.routes";
import { publicRoutes } from "./http/public.routes";

export interface BillingServices {
  holdOps: HoldOpsRepository;
  holdReads: HoldRepository;
  holds: HoldService;
  accounts: AccountService;
  keys: ApiKeyService;
  catalog: CatalogService;
}

export function createBillingServices(database: Database, timezone: string): BillingServices {
  const db = database.prisma;
  const holdOps = new HoldOpsRepository(database.pool, timezone);
  return {
    holdOps,
    holdReads: new HoldRepository(db),
    holds: new HoldService(holdOps),
    accounts: new AccountService(db),
    keys: new ApiKeyService(db, timezone),
    catalog: new CatalogService(db),
  };
}

export interface AppDeps {
  internalSecret: string;
  logger: Logger;
  metrics: Metrics;
  services: BillingServices;
  readiness: ReadinessCheck[];
}

export function createApp(deps: AppDeps): Express {
  const body = jsonBody({ limit: "1mb" });
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use("/admin/v1", requireIdentity(deps.internalSecret, ["admin"]), body, adminRoutes(deps.services));
    app.use("/internal/v1", requireIdentity(deps.internalSecret, ["service"]), body, internalRoutes(deps.services));
    app.use("/v1", requireIdentity(deps.internalSecret, ["key"]), publicRoutes(deps.services));
  });
}
