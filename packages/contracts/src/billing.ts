import { z } from "zod";
import { Microrub } from "./money";
import { Operation } from "./scopes";
import { KeyIdentity } from "./identity";

/** POST /internal/v1/keys/verify */
export const VerifyKeyRequest = z.object({ key: z.string().min(1).max(512) });
export const VerifyKeyResponse = z.object({
  identity: KeyIdentity,
  daily_budget_microrub: Microrub,
  status: z.literal("active"),
});
export type VerifyKeyResponse = z.infer<typeof VerifyKeyResponse>;

export const HoldStatus = z.enum(["active", "settled", "released", "expired"]);
export type HoldStatus = z.infer<typeof HoldStatus>;

/** Which service placed a hold; its reconciler owns resolving it. */
export const HoldSource = z.enum(["text", "media-jobs", "mcp", "files"]);
export type HoldSource = z.infer<typeof HoldSource>;

/** POST /internal/v1/holds. `hold_id` is chosen by the caller, which makes placing idempotent. */
export const PlaceHoldRequest = z.strictObject({
  hold_id: z.uuid(),
  key_id: z.uuid(),
  amount_microrub: Microrub,
  operation: Operation,
  model: z.string().min(1),
  source: HoldSource,
});
export type PlaceHoldRequest = z.infer<typeof PlaceHoldRequest>;

export const Hold = z.object({
  hold_id: z.uuid(),
  organization_id: z.uuid().nullable(),
  key_id: z.uuid().nullable(),
  status: HoldStatus,
  amount_microrub: Microrub,
  settled_microrub: Microrub.nullable(),
  operation: z.string().nullable(),
  model: z.string().nullable(),
  source: z.string().nullable(),
  budget_day: z.string().nullable(),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type Hold = z.infer<typeof Hold>;

/** POST /internal/v1/holds/{hold_id}/settle */
export const SettleHoldRequest = z.strictObject({ amount_microrub: Microrub });
export type SettleHoldRequest = z.infer<typeof SettleHoldRequest>;

/**
 * POST /internal/v1/holds/{hold_id}/release. A release of a hold that was never placed records the id
 * as released, so a placement that arrives late (after its caller gave up waiting) places nothing.
 */
export const ReleaseHoldRequest = z.strictObject({
  reason: z.string().min(1).max(200),
});
export type ReleaseHoldRequest = z.infer<typeof ReleaseHoldRequest>;

export const BalanceResponse = z.object({
  organization_id: z.uuid(),
  balance_microrub: Microrub,
  reserved_microrub: Microrub,
  available_microrub: Microrub,
});
export type BalanceResponse = z.infer<typeof BalanceResponse>;

/**
 * POST /internal/v1/hold-ops: many hold operations in one call. A busy caller batches its concurrent
 * requests' holds and settlements into one round trip (each socket write is the dearest thing on the
 * path); each operation succeeds or fails on its own.
 */
export const HoldOp = z.discriminatedUnion("op", [
  PlaceHoldRequest.extend({ op: z.literal("place") }),
  SettleHoldRequest.extend({ op: z.literal("settle"), hold_id: z.uuid() }),
  ReleaseHoldRequest.extend({ op: z.literal("release"), hold_id: z.uuid() }),
]);
export type HoldOp = z.infer<typeof HoldOp>;

export const HoldOpsRequest = z.strictObject({ ops: z.array(HoldOp).min(1).max(500) });
export type HoldOpsRequest = z.infer<typeof HoldOpsRequest>;

export const HoldOpResult = z.union([
  z.object({ ok: z.literal(true), hold: Hold }),
  z.object({ ok: z.literal(false), error: z.object({ status: z.number().int(), code: z.string(), message: z.string() }) }),
]);
export type HoldOpResult = z.infer<typeof HoldOpResult>;

export const HoldOpsResponse = z.object({ results: z.array(HoldOpResult) });
export type HoldOpsResponse = z.infer<typeof HoldOpsResponse>;
