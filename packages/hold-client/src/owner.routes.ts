import { Router } from "express";
import { HoldOwnerEndpoints } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { HoldOwnerAudit } from "./owner-audit";

/** What billing-ledger asks every owner of holds (signed billing-ledger identity only): the hold audit and the books cross-check's listing. */
export function holdOwnerRoutes(audit: Pick<HoldOwnerAudit<never>, "audit" | "finalHolds">): Router {
  const r = Router();
  r.post(HoldOwnerEndpoints.audit.path, async (req, res) => {
    res.json({ verdicts: await audit.audit(parseInput(HoldOwnerEndpoints.audit.request, req.body)) });
  });
  r.post(HoldOwnerEndpoints.finalHolds.path, async (req, res) => {
    res.json(await audit.finalHolds(parseInput(HoldOwnerEndpoints.finalHolds.request, req.body)));
  });
  return r;
}
