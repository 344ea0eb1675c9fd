import type { RequestHandler } from "express";
import type { Identity } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import { assertAdminToken } from "../auth/admin-token";
import type { HealthReporter } from "./health-report";

/** `GET /admin/v1/health` on the public port, with ADMIN_TOKEN. */
export function adminHealthRoute(report: HealthReporter, adminToken: string): RequestHandler[] {
  return [
    (req, _res, next) => {
      assertAdminToken(req.headers, adminToken);
      next();
    },
    async (_req, res) => {
      res.json(await report());
    },
  ];
}

/**
 * The same report at `/cabinet/api/admin/health`, for the operator's session (mounted with `use`, as
 * the other `/cabinet/api/admin/...` doors: the document describes them as the admin operations).
 */
export function cabinetHealthRoute(report: HealthReporter): RequestHandler {
  return async (req, res, next) => {
    if (req.path !== "/") return next();
    if (req.method !== "GET") {
      res.setHeader("allow", "GET");
      throw new AppError("method_not_allowed", `${req.method} is not allowed on the health report`);
    }
    const identity = res.locals.identity as Identity;
    if (identity.kind !== "session" || identity.role !== "operator") throw new AppError("insufficient_scope", "only the operator may see the system's health");
    res.json(await report());
  };
}
