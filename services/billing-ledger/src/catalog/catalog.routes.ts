import { Router } from "express";
import {
  ADMIN_PREFIX,
  AdminCatalogOperations,
  BillingEndpoints,
  CABINET_API_PREFIX,
  CabinetCatalogOperations,
  ModelOperations,
  ModelUpsert,
} from "@meter/contracts";
import { onlyFrom, operationRouter, parseInput } from "@meter/service-kit";
import type { MemberScope } from "../accounts/member-scope";
import { sessionIdentityOf } from "../http/session-identity";
import type { CatalogService } from "./catalog.service";
import { modelIdOf } from "./model-id";

/** The services that price their requests from the catalog (the ones that place holds). */
const PRICERS = ["text", "media-jobs", "media-jobs-worker"] as const;

/** `GET /v1/models` and `GET /v1/models/{id}`: the published catalog, for any valid key. */
export function catalogPublicRoutes(catalog: CatalogService): Router {
  return operationRouter(ModelOperations, "/v1", {
    models: async (_req, res) => {
      res.json(await catalog.published());
    },
    model: async (req, res) => {
      res.json(await catalog.publishedOne(modelIdOf(req)));
    },
  });
}

/**
 * A member's Models page (`/cabinet/v1/models`): the published catalog, as a key reads it at
 * `GET /v1/models`. No organization is limited to some models, so every member sees the same list;
 * the membership is still checked, as on every member page.
 */
export function catalogMemberRoutes(deps: { catalog: CatalogService; scope: MemberScope }): Router {
  return operationRouter(CabinetCatalogOperations, CABINET_API_PREFIX, {
    models: async (req, res) => {
      await deps.scope.of(sessionIdentityOf(req));
      res.json(await deps.catalog.published());
    },
  });
}

/** `GET /internal/v1/catalog` (its full path, from the contracts): every model with its provider, for the services that price. */
export function catalogInternalRoutes(catalog: CatalogService): Router {
  const r = Router();
  r.get(BillingEndpoints.catalog.path, onlyFrom(...PRICERS), async (_req, res) => {
    res.json({ models: await catalog.list() });
  });
  return r;
}

/** The operator's catalog (`/admin/v1/models`): every model, enabled or not, and its tariffs. */
export function catalogAdminRoutes(catalog: CatalogService): Router {
  return operationRouter(AdminCatalogOperations, ADMIN_PREFIX, {
    models: async (_req, res) => {
      res.json({ object: "list", data: await catalog.list() });
    },
    model: async (req, res) => {
      res.json(await catalog.get(modelIdOf(req)));
    },
    putModel: async (req, res) => {
      const { model, created } = await catalog.upsert(modelIdOf(req), parseInput(ModelUpsert, req.body));
      res.status(created ? 201 : 200).json(model);
    },
  });
}
