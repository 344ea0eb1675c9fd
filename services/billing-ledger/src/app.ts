import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import type { AccountService } from "./accounts/account.service";
import { accountsAdminRoutes, memberMoneyRoutes } from "./accounts/accounts.routes";
import type { CabinetServices } from "./cabinet.services";
import { catalogAdminRoutes, catalogInternalRoutes, catalogMemberRoutes, catalogPublicRoutes } from "./catalog/catalog.routes";
import type { CatalogService } from "./catalog/catalog.service";
import type { HoldRepository } from "./holds/hold.repository";
import type { HoldService } from "./holds/hold.service";
import { holdsAdminRoutes, holdsInternalRoutes } from "./holds/holds.routes";
import type { BooksCrossCheckService } from "./holds/books-cross-check.service";
import { operatorOnly } from "./http/session-identity";
import { cabinetInternalRoutes } from "./identity/cabinet-internal.routes";
import { invitationAdminRoutes, sessionRoutes } from "./identity/identity.routes";
import type { ApiKeyService } from "./keys/api-key.service";
import type { KeyUsageService } from "./keys/key-usage.service";
import type { KeyDetailService } from "./keys/key-detail.service";
import { keysAdminRoutes, keysInternalRoutes, memberKeysRoutes } from "./keys/keys.routes";
import type { WebhookRepository } from "./webhooks/webhook.repository";
import type { WebhookService } from "./webhooks/webhook.service";
import { memberWebhooksRoutes, webhooksAdminRoutes } from "./webhooks/webhooks.routes";
import { requestLogAdminRoutes, requestLogCabinetRoutes, requestLogInternalRoutes, requestLogPublicRoutes } from "./request-log/request-log.routes";
import type { RequestLogService } from "./request-log/request-log.service";
import type { UsageAnalyticsService } from "./request-log/usage-analytics.service";

/** billing's rules, as the routes are given them (composition.ts builds them). */
export interface BillingServices {
  holdReads: HoldRepository;
  holds: HoldService;
  accounts: AccountService;
  keys: ApiKeyService;
  keyUsage: KeyUsageService;
  keyDetail: KeyDetailService;
  catalog: CatalogService;
  cabinet: CabinetServices;
  webhookRows: WebhookRepository;
  webhooks: WebhookService;
  requestLog: RequestLogService;
  analytics: UsageAnalyticsService;
}

export interface AppDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  services: BillingServices;
  /** The books cross-check against the hold owners (built beside the owners it asks). */
  crossCheck: BooksCrossCheckService;
  readiness: ReadinessCheck[];
}

/** The doors, each with the features' routes behind it. */
export function createApp(deps: AppDeps): Express {
  const body = jsonBody({ limit: "1mb" });
  const s = deps.services;
  const c = s.cabinet;
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    // The operator: with ADMIN_TOKEN (admin) or signed in to the web cabinet (an operator session).
    app.use(
      "/admin/v1",
      requireIdentity(deps.auth, { kinds: ["admin", "session"], from: ["gateway"] }),
      operatorOnly,
      body,
      accountsAdminRoutes({ accounts: s.accounts, directory: c.directory, money: c.money, lines: c.ledger }),
      keysAdminRoutes(s),
      requestLogAdminRoutes(s.requestLog, s.analytics),
      catalogAdminRoutes(s.catalog),
      holdsAdminRoutes({ ...s, crossCheck: deps.crossCheck }),
      invitationAdminRoutes(c.invitations),
      webhooksAdminRoutes(s.webhooks),
    );
    // Internal routes carry their full paths (the contracts' endpoints); the door guards the prefix.
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["gateway", "text", "media-jobs", "media-jobs-worker"] }), body);
    app.use(
      keysInternalRoutes(s.keys),
      catalogInternalRoutes(s.catalog),
      holdsInternalRoutes(s.holds),
      cabinetInternalRoutes(c),
      requestLogInternalRoutes(s.requestLog),
    );
    app.use(
      "/cabinet/v1",
      requireIdentity(deps.auth, { kinds: ["session"], from: ["gateway"] }),
      body,
      sessionRoutes(c.sessions, c.signIn),
      memberMoneyRoutes(c),
      requestLogCabinetRoutes(s.requestLog, s.analytics),
      memberKeysRoutes(c.memberKeys),
      memberWebhooksRoutes({ webhooks: s.webhooks, scope: c.scope }),
      catalogMemberRoutes({ catalog: s.catalog, scope: c.scope }),
    );
    app.use("/v1", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }), catalogPublicRoutes(s.catalog), requestLogPublicRoutes(s.requestLog));
  });
}
