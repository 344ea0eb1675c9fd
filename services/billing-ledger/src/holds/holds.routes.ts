import { Router } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AdminHoldOperations,
  BillingEndpoints,
  CrossCheckRequest,
  HoldListQuery,
  ReleaseHoldRequest,
  RepairHoldByHandRequest,
  type Hold,
  type HoldOpResult,
} from "@meter/contracts";
import { AppError, onlyFrom, operationRouter, parseInput } from "@meter/service-kit";
import type { HoldRepository } from "./hold.repository";
import type { HoldService } from "./hold.service";
import type { BooksCrossCheckService } from "./books-cross-check.service";
import { HOLD_SOURCE_OF, HOLDERS } from "./hold-source";

const Uuid = z.uuid();

/** `POST /internal/v1/hold-ops` (its full path, from the contracts): the holders' batches of hold operations. */
export function holdsInternalRoutes(holds: HoldService): Router {
  const r = Router();
  r.post(BillingEndpoints.holdOps.path, onlyFrom(...HOLDERS), async (req, res) => {
    const { ops } = parseInput(BillingEndpoints.holdOps.request, req.body);
    // One transaction, one answer per op, all in the name of the signed caller: onlyFrom let in holders only.
    const source = HOLD_SOURCE_OF[req.caller!]!;
    const results = (await holds.answerAs(source, ops)).map(resultOf);
    res.json({ results });
  });
  return r;
}

/** The operator's hold report, hand release (`/admin/v1/holds`) and the books cross-check with its repairs by hand (`/admin/v1/books/cross-check`). */
export function holdsAdminRoutes(deps: { holdReads: HoldRepository; holds: HoldService; crossCheck: BooksCrossCheckService }): Router {
  return operationRouter(AdminHoldOperations, ADMIN_PREFIX, {
    /** The hold report: what is active (and for how long), and what expired unresolved. */
    holds: async (req, res) => {
      const q = parseInput(HoldListQuery, req.query);
      const data = await deps.holdReads.list({
        status: q.status,
        source: q.source,
        limit: q.limit,
        ...(q.older_than_s === undefined ? {} : { createdBefore: new Date(Date.now() - q.older_than_s * 1000), oldestFirst: true }),
      });
      res.json({ object: "list", data });
    },
    /** An operator frees a hold nobody resolved; the ledger entry carries the reason. */
    releaseHold: async (req, res) => {
      const { reason } = parseInput(ReleaseHoldRequest, req.body);
      res.json(await deps.holds.releaseByOperator(parseInput(Uuid, req.params.hold_id), reason));
    },
    /** Every owner's final records against billing's holds now, repaired unless `repair` is false (`npm run books:cross-check`). */
    booksCrossCheck: async (req, res) => {
      const { repair } = parseInput(CrossCheckRequest, req.body ?? {});
      res.json(await deps.crossCheck.run({ repair }));
    },
    /** One record the cross-check would not repair (no signature of billing covers it), repaired on the operator's word and logged. */
    repairHoldByHand: async (req, res) => {
      const { reason } = parseInput(RepairHoldByHandRequest, req.body);
      res.json(await deps.crossCheck.repairByHand(parseInput(Uuid, req.params.hold_id), reason));
    },
  });
}

function resultOf(answer: Hold | AppError): HoldOpResult {
  if (!(answer instanceof AppError)) return { ok: true, hold: answer };
  // A refusal caused by money parked in allowances says when to try again (docs/api.md, "Allowances").
  const retryAfter = answer.details?.retry_after_seconds;
  const error = { status: answer.status, code: answer.code, message: answer.message };
  return { ok: false, error: typeof retryAfter === "number" ? { ...error, retry_after_seconds: retryAfter } : error };
}
