import { Router } from "express";
import type { CatalogService } from "../services/catalog.service";

/** `GET /v1/models`: the published catalog, for any valid key. */
export function publicRoutes(deps: { catalog: CatalogService }): Router {
  const r = Router();
  r.get("/models", async (_req, res) => {
    res.json(await deps.catalog.published());
  });
  return r;
}
