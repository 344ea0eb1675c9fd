import type { Router } from "express";
import { AllowanceHolderEndpoints } from "@meter/contracts";
import { holdOwnerRoutes } from "@meter/hold-client";
import { parseInput } from "@meter/service-kit";
import type { HoldAuditService } from "../services/hold-audit.service";

/** What billing-ledger calls (signed billing-ledger identity only): the hold audit, the books cross-check and what it finds of allowances. */
export function internalRoutes(deps: { audit: HoldAuditService }): Router {
  const r = holdOwnerRoutes(deps.audit);
  r.post(AllowanceHolderEndpoints.unknownAllowances.path, async (req, res) => {
    res.json(await deps.audit.unknownAllowances(parseInput(AllowanceHolderEndpoints.unknownAllowances.request, req.body)));
  });
  return r;
}
