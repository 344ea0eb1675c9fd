import { Router } from "express";
import { AllowanceHolderEndpoints, HoldOwnerEndpoints } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { HoldAuditService } from "../services/hold-audit.service";

/** What billing-ledger calls (signed billing-ledger identity only): the hold audit, the books cross-check and what it finds of allowances. */
export function internalRoutes(deps: { audit: HoldAuditService }): Router {
  const r = Router();
  r.post(HoldOwnerEndpoints.audit.path, async (req, res) => {
    res.json({ verdicts: await deps.audit.audit(parseInput(HoldOwnerEndpoints.audit.request, req.body)) });
  });
  r.post(HoldOwnerEndpoints.finalHolds.path, async (req, res) => {
    res.json(await deps.audit.finalHolds(parseInput(HoldOwnerEndpoints.finalHolds.request, req.body)));
  });
  r.post(AllowanceHolderEndpoints.unknownAllowances.path, async (req, res) => {
    res.json(await deps.audit.unknownAllowances(parseInput(AllowanceHolderEndpoints.unknownAllowances.request, req.body)));
  });
  return r;
}
