import type { Hold } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import { BillingUnreachable } from "@meter/service-clients";

/**
 * What a hold placement came to, as every service that places holds must tell it apart:
 * - `held`: the hold is active under its id;
 * - `id_used_up`: the id cannot hold (taken with another amount, or already released or settled): the
 *   work must be reserved under a fresh id, the old one released if it was the record's own;
 * - `refused`: billing refused (balance, budget, a revoked key): nothing is held under this id;
 * - `unreachable`: no answer; `delivery` says whether billing may have acted (`unknown`) or certainly
 *   did not (`not_delivered`).
 * Anything else (a bug, not billing's answer) is thrown.
 */
export type Placement =
  | { kind: "held"; hold: Hold }
  | { kind: "id_used_up"; why: string }
  | { kind: "refused"; error: AppError }
  | { kind: "unreachable"; error: BillingUnreachable };

export async function placementOf(placing: Promise<Hold>): Promise<Placement> {
  let hold: Hold;
  try {
    hold = await placing;
  } catch (e) {
    if (e instanceof AppError && e.code === "conflict") return { kind: "id_used_up", why: "its hold id was taken with another amount" };
    if (e instanceof AppError) return { kind: "refused", error: e };
    if (e instanceof BillingUnreachable) return { kind: "unreachable", error: e };
    throw e;
  }
  return hold.status === "active" ? { kind: "held", hold } : { kind: "id_used_up", why: `its hold id is already ${hold.status}` };
}
