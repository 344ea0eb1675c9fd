import { Router } from "express";
import { ADMIN_PREFIX, AdminCatalogOperations, BillingEndpoints, ModelOperations, ModelUpsert } from "@meter/contracts";
import { onlyFrom, operationRouter, parseInput } from "@meter/service-kit";
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
