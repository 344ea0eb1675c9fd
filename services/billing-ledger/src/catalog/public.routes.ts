import { Router } from "express";
import type { CatalogService } from "./catalog.service";
import { modelIdOf } from "./model-id";

/** `GET /v1/models` and `GET /v1/models/{id}`: the published catalog, for any valid key. */
export function publicRoutes(deps: { catalog: CatalogService }): Router {
  const r = Router();
  r.get("/models", async (_req, res) => {
    res.json(await deps.catalog.published());
  });
  r.get("/models/*id", async (req, res) => {
    res.json(await deps.catalog.publishedOne(modelIdOf(req)));
  });
  return r;
}
