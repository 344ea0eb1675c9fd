import { Router, type Request, type Response } from "express";
import { CABINET_API_PREFIX, CabinetFileOperations, CabinetJobOperations, type Identity } from "@meter/contracts";
import { AppError, operationRouter } from "@meter/service-kit";
import type { HealthReporter } from "../health/health-report";
import { cabinetHealthRoute } from "../health/health.routes";
import { requireSession } from "./session-auth";
import type { SignedCaller } from "./signed-caller";

export interface CabinetApiOptions {
  billing: SignedCaller;
  files?: SignedCaller | undefined;
  mediaJobs?: SignedCaller | undefined;
  /** The operator's view of text's upstream routing (`/cabinet/api/admin/text/*`). */
  text?: SignedCaller | undefined;
  mediaEnabled: boolean;
  /** The operator's health report, answered by the gateway itself (`/cabinet/api/admin/health`). */
  health: HealthReporter;
}

/**
 * What the pages call once signed in, forwarded with the session's identity signed for the service
 * that owns the data: `/cabinet/api/admin/*` -> billing's `/admin/v1/*` (the operator's session only;
 * billing checks; `/cabinet/api/admin/text/*` -> text's `/admin/v1/text/*`, text checks), `/cabinet/api/files`
 * (list, a file's content, delete) -> files, `/cabinet/api/jobs` -> media-jobs, the rest ->
 * billing's member API `/cabinet/v1/*`. `/cabinet/api/admin/health` is the gateway's own (health.routes.ts).
 */
export function cabinetApiRoutes(o: CabinetApiOptions): Router {
  const r = Router();
  // The body was read and checked before (cabinet.ts).
  r.use(requireSession(o.billing));

  const forward = (caller: SignedCaller | undefined, service: string, prefix: string) => async (req: Request, res: Response) => {
    if (!caller) throw new AppError("service_unavailable", `the ${service} service is not available`);
    await caller.relay(res, {
      method: req.method as "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
      // req.url is what follows the mount point, query included.
      path: prefix + req.url,
      identity: res.locals.identity as Identity,
      body: req.method === "GET" || req.method === "DELETE" ? undefined : (res.locals.rawBody ?? "{}"),
      requestId: req.requestId,
    });
  };

  r.use("/admin/health", cabinetHealthRoute(o.health));
  r.use("/admin/text", forward(o.text, "text", "/admin/v1/text"));
  r.use("/admin", forward(o.billing, "billing-ledger", "/admin/v1"));
  // Route handlers see the router's whole path in req.url (only r.use strips its own).
  const toFiles = forward(o.files, "files", "/cabinet/v1");
  r.use(operationRouter(CabinetFileOperations, CABINET_API_PREFIX, { files: toFiles, fileContent: toFiles, deleteFile: toFiles }));
  r.use(
    operationRouter(CabinetJobOperations, CABINET_API_PREFIX, {
      jobs: [
        (_req, _res, next) => {
          if (!o.mediaEnabled) return next(new AppError("media_disabled", "media operations are turned off on this service (MEDIA_ENABLED)"));
          next();
        },
        forward(o.mediaJobs, "media-jobs", "/cabinet/v1"),
      ],
    }),
  );
  // The member API: billing-ledger mounts its operations (CabinetMemberOperations) from the contracts.
  r.use(forward(o.billing, "billing-ledger", "/cabinet/v1"));
  return r;
}
