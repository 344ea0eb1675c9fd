import { Router, type RequestHandler } from "express";
import type { CabinetBundle } from "@meter/cabinet-web";
import { AppError, type InternalAuth } from "@meter/service-kit";
import { jsonBodyGuard } from "../http/body";
import { InFlightLimit } from "../overload/in-flight-limit";
import type { HealthReporter } from "../health/health-report";
import type { ServiceName } from "../routes";
import { cabinetApiRoutes } from "./cabinet-api.routes";
import type { SecureCookies } from "./session-cookies";
import { signInRoutes } from "./sign-in.routes";
import { SignedCaller } from "./signed-caller";
import { securityHeaders, staticPagesRoutes } from "./static-pages.routes";

export interface CabinetOptions {
  auth: InternalAuth;
  adminToken: string;
  bundle: CabinetBundle;
  /** Base URL of each service that exists. */
  services: Partial<Record<ServiceName, string>>;
  mediaEnabled: boolean;
  /** CABINET_SECURE_COOKIES */
  secureCookies: SecureCookies;
  /** JSON_BODY_LIMIT_BYTES */
  jsonLimit: number;
  /** Cabinet requests in flight at once in this process (SERVICE_MAX_IN_FLIGHT): over it 503 at once. */
  maxInFlight: number;
  /** The operator's health page's report. */
  health: HealthReporter;
}

/**
 * The web cabinet at /cabinet: its pages and their files, sign-in, and the API the pages call, which
 * this gateway forwards to billing-ledger, files, media-jobs and text with the session's identity signed.
 */
export function createCabinet(o: CabinetOptions): RequestHandler {
  const caller = (service: ServiceName & ("billing-ledger" | "files" | "media-jobs" | "text")) => {
    const url = o.services[service];
    return url ? new SignedCaller(o.auth, url, service) : undefined;
  };
  const billing = caller("billing-ledger");
  if (!billing) throw new Error("the cabinet needs billing-ledger (its users, sessions and money)");
  const inFlight = new InFlightLimit(o.maxInFlight);

  const r = Router();
  r.use(securityHeaders);
  // The body is read (bounded in size and pace) before a place is taken: a client dripping its body
  // must not hold one of the few places while it drips (as the public routes do, app.ts).
  r.use("/api", ...jsonBodyGuard(o.jsonLimit), (_req, res, next) => {
    res.setHeader("cache-control", "no-store");
    const release = inFlight.tryAcquire("cabinet");
    if (!release) return next(new AppError("service_unavailable", "the cabinet is busy; try again in a moment", { headers: { "retry-after": "1" } }));
    res.once("close", release);
    next();
  });
  r.use("/api", signInRoutes({ billing, adminToken: o.adminToken, secureCookies: o.secureCookies }));
  r.use(
    "/api",
    cabinetApiRoutes({
      billing,
      files: caller("files"),
      mediaJobs: caller("media-jobs"),
      text: caller("text"),
      mediaEnabled: o.mediaEnabled,
      health: o.health,
    }),
  );
  r.use(staticPagesRoutes(o.bundle));
  return r;
}
