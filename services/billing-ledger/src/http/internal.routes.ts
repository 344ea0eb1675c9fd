import { Router } from "express";
import { z } from "zod";
import { HoldOpsRequest, PlaceHoldRequest, ReleaseHoldRequest, SettleHoldRequest, VerifyKeyRequest, type HoldOp, type HoldOpResult } from "@meter/contracts";
import { AppError, parseInput } from "@meter/service-kit";
import type { ApiKeyService } from "../services/api-key.service";
import type { CatalogService } from "../services/catalog.service";
import type { HoldService } from "../services/hold.service";
import type { HoldRepository } from "../repositories/hold.repository";
import { BillingErrors } from "../errors";

const HoldId = z.uuid();
const StaleQuery = z.object({
  source: z.string().min(1),
  older_than_s: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

/** What sibling services call (signed service identity only): key checks, the catalog, and holds. */
export function internalRoutes(deps: { holdReads: HoldRepository; keys: ApiKeyService; catalog: CatalogService; holds: HoldService }): Router {
  const r = Router();

  r.post("/keys/verify", async (req, res) => {
    res.json(await deps.keys.verify(parseInput(VerifyKeyRequest, req.body).key));
  });

  r.get("/catalog", async (_req, res) => {
    res.json({ models: await deps.catalog.list() });
  });

  r.post("/holds", async (req, res) => {
    const { hold, created } = await deps.holds.place(parseInput(PlaceHoldRequest, req.body));
    res.status(created ? 201 : 200).json(hold);
  });

  r.post("/hold-ops", async (req, res) => {
    const { ops } = parseInput(HoldOpsRequest, req.body);
    const results = await Promise.all(ops.map((op) => applyOne(deps.holds, op)));
    res.json({ results });
  });

  /** A reconciler's view: active holds a source placed more than `older_than_s` ago. */
  r.get("/holds", async (req, res) => {
    const q = parseInput(StaleQuery, req.query);
    const data = await deps.holdReads.list({
      status: "active",
      source: q.source,
      createdBefore: new Date(Date.now() - q.older_than_s * 1000),
      oldestFirst: true,
      limit: q.limit,
    });
    res.json({ object: "list", data });
  });

  r.get("/holds/:id", async (req, res) => {
    const holdId = parseInput(HoldId, req.params.id);
    const hold = await deps.holdReads.find(holdId);
    if (!hold) throw BillingErrors.holdNotFound(holdId);
    res.json(hold);
  });

  r.post("/holds/:id/settle", async (req, res) => {
    const holdId = parseInput(HoldId, req.params.id);
    res.json(await deps.holds.settle(holdId, parseInput(SettleHoldRequest, req.body).amount_microrub));
  });

  r.post("/holds/:id/release", async (req, res) => {
    const holdId = parseInput(HoldId, req.params.id);
    res.json(await deps.holds.release(holdId, parseInput(ReleaseHoldRequest, req.body).reason));
  });

  return r;
}

/** One operation of a batch: its hold, or the error the single-operation endpoint would have answered. */
async function applyOne(holds: HoldService, op: HoldOp): Promise<HoldOpResult> {
  try {
    const hold =
      op.op === "place"
        ? (await holds.place(op)).hold
        : op.op === "settle"
          ? await holds.settle(op.hold_id, op.amount_microrub)
          : await holds.release(op.hold_id, op.reason);
    return { ok: true, hold };
  } catch (e) {
    if (e instanceof AppError) return { ok: false, error: { status: e.status, code: e.code, message: e.message } };
    throw e;
  }
}
