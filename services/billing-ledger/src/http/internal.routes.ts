import { Router } from "express";
import { BillingEndpoints, type Hold, type HoldOpResult } from "@meter/contracts";
import { AppError, onlyFrom, parseInput } from "@meter/service-kit";
import type { ApiKeyService } from "../keys/api-key.service";
import type { CatalogService } from "../catalog/catalog.service";
import type { HoldService } from "../holds/hold.service";

/** The services that place and resolve holds. */
const HOLDERS = ["text", "media-jobs", "media-jobs-worker"] as const;

/** What sibling services call (signed service identity only): key checks, the catalog, and hold operations. */
export function internalRoutes(deps: { keys: ApiKeyService; catalog: CatalogService; holds: HoldService }): Router {
  const r = Router();

  r.post(BillingEndpoints.verifyKey.path, onlyFrom("gateway"), async (req, res) => {
    res.json(await deps.keys.verify(parseInput(BillingEndpoints.verifyKey.request, req.body).key));
  });

  r.get(BillingEndpoints.catalog.path, onlyFrom(...HOLDERS), async (_req, res) => {
    res.json({ models: await deps.catalog.list() });
  });

  r.post(BillingEndpoints.holdOps.path, onlyFrom(...HOLDERS), async (req, res) => {
    const { ops } = parseInput(BillingEndpoints.holdOps.request, req.body);
    // The batch goes to the database as it came: one transaction, one answer per op.
    const results = (await deps.holds.answer(ops)).map(resultOf);
    res.json({ results });
  });

  return r;
}

function resultOf(answer: Hold | AppError): HoldOpResult {
  return answer instanceof AppError ? { ok: false, error: { status: answer.status, code: answer.code, message: answer.message } } : { ok: true, hold: answer };
}
