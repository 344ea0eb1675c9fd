import type { RequestHandler, Router } from "express";
import { ADMIN_PREFIX, AdminTextOperations } from "@meter/contracts";
import { AppError, operationRouter } from "@meter/service-kit";
import type { RoutingViewService } from "../services/routing-view.service";

/** The operator: ADMIN_TOKEN (`admin`) or the web cabinet's operator session; a member's session gets no further. */
export const operatorOnly: RequestHandler = (req, _res, next) => {
  const id = req.identity;
  if (id?.kind === "admin" || (id?.kind === "session" && id.role === "operator")) return next();
  next(new AppError("insufficient_scope", "only the operator may see upstream routing"));
};

/** `/admin/v1/text/...`: the providers of each model with their health, and one request's providers. */
export function adminRoutes(deps: { routing: RoutingViewService }): Router {
  return operationRouter(AdminTextOperations, ADMIN_PREFIX, {
    textProviders: async (_req, res) => {
      res.json({ object: "list", data: await deps.routing.providers() });
    },
    textRequest: async (req, res) => {
      res.json(await deps.routing.request(String(req.params.request_id)));
    },
  });
}
