import type { Express } from "express";
import { holdOwnerRoutes, type HoldOwnerAudit } from "@meter/hold-client";
import { createServiceApp, jsonBody, requireIdentity, type InternalAuth, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import { cabinetRoutes } from "./http/cabinet.routes";
import { jobsRoutes, type JobsRoutesDeps } from "./http/jobs.routes";
import { quotesRoutes } from "./http/quotes.routes";
import type { MemberJobsService } from "./services/member-jobs.service";
import type { QuoteService } from "./services/quote.service";

export interface AppDeps extends JobsRoutesDeps {
  auth: InternalAuth;
  logger: Logger;
  metrics: Metrics;
  quotes: QuoteService;
  audit: Pick<HoldOwnerAudit<never>, "audit" | "finalHolds">;
  /** The web cabinet's list of a member's jobs. */
  memberJobs: MemberJobsService;
  readiness: ReadinessCheck[];
}

/** Three doors: key holders through the gateway, billing-ledger's hold audit, and signed-in members (the web cabinet). */
export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    // The gateway bounds JSON bodies (1 MiB by default); this is a backstop with room for framing.
    app.use("/v1", requireIdentity(deps.auth, { kinds: ["key"], from: ["gateway"] }), jsonBody({ limit: "2mb" }));
    app.use("/internal/v1", requireIdentity(deps.auth, { kinds: ["service"], from: ["billing-ledger"] }), jsonBody({ limit: "1mb" }));
    app.use("/cabinet/v1", requireIdentity(deps.auth, { kinds: ["session"], from: ["gateway"] }));
    app.use(jobsRoutes(deps));
    app.use(quotesRoutes({ quotes: deps.quotes }));
    app.use(holdOwnerRoutes(deps.audit));
    app.use(cabinetRoutes({ memberJobs: deps.memberJobs }));
  });
}
