import { z } from "zod";
import { Microrub, SignedMicrorub } from "./money";
import { Operation } from "./scopes";
import { KeyIdentity } from "./identity";
import { Catalog } from "./catalog";
import { withoutNul } from "./text-field";
import { endpoint } from "./endpoints";
import { RecordRefusalsRequest, RecordRefusalsResponse, RequestLogFields } from "./request-log";

/** POST /internal/v1/keys/verify */
export const VerifyKeyRequest = z.object({ key: z.string().min(1).max(512) });
export const VerifyKeyResponse = z.object({
  identity: KeyIdentity,
  daily_budget_microrub: Microrub,
  status: z.literal("active"),
  /** From then on the key is refused: a gateway keeps the answer no longer. */
  expires_at: z.string().nullable().optional(),
});
export type VerifyKeyResponse = z.infer<typeof VerifyKeyResponse>;

export const HoldStatus = z.enum(["active", "settled", "released", "expired"]);
export type HoldStatus = z.infer<typeof HoldStatus>;

/** Which service placed a hold; its reconciler owns resolving it. */
export const HoldSource = z.enum(["text", "media-jobs", "mcp", "files"]);
export type HoldSource = z.infer<typeof HoldSource>;

/**
 * Placing a hold. `hold_id` is chosen by the caller, which makes placing idempotent; `source` and
 * `owner_ref` name the service and the record (text request, media job) the hold belongs to, so
 * billing can ask its owner about a hold that stays active too long.
 */
export const PlaceHoldRequest = z.strictObject({
  hold_id: z.uuid(),
  key_id: z.uuid(),
  amount_microrub: Microrub,
  operation: Operation,
  model: z.string().min(1),
  source: HoldSource,
  owner_ref: z.string().min(1).max(200),
});
export type PlaceHoldRequest = z.infer<typeof PlaceHoldRequest>;

/**
 * Granting an allowance (docs/api.md, "Allowances"): a hold a service process takes ahead of its
 * requests for one key and budget day, and then spends locally, one request's estimate at a time, in
 * its own database's commit. `hold_id` is the allowance's id, chosen by the holder (granting is
 * idempotent on it). Billing grants at most `amount_microrub` and at most a fraction of what the key and
 * its organization have left; when that is less than `min_microrub` it refuses (`insufficient_balance`
 * or `daily_budget_exceeded`, whichever is short) and the holder places per-request holds instead.
 */
export const GrantAllowanceRequest = z.strictObject({
  hold_id: z.uuid(),
  key_id: z.uuid(),
  amount_microrub: Microrub,
  min_microrub: Microrub,
  /** The estimate of the request that asked: billing grants a whole number of these. */
  unit_microrub: Microrub.optional(),
  /** What it will be spent on. */
  operation: Operation,
  source: HoldSource,
  /** The holder's allowance record, asked about by the hold audit. */
  owner_ref: z.string().min(1).max(200),
});
export type GrantAllowanceRequest = z.infer<typeof GrantAllowanceRequest>;

/**
 * A request's hold that its service placed locally against an allowance, as its settle or release
 * command names it: billing records the request's hold when it learns of it, moving `reserved_microrub`
 * out of the allowance.
 */
export const AllowanceSpend = z.strictObject({
  allowance_id: z.uuid(),
  key_id: z.uuid(),
  reserved_microrub: Microrub,
  operation: Operation,
  model: z.string().min(1),
  owner_ref: z.string().min(1).max(200),
});
export type AllowanceSpend = z.infer<typeof AllowanceSpend>;

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
  owner_ref: z.string().nullable(),
  /** The budget day (YYYY-MM-DD, BUDGET_TIMEZONE) a settled hold's charge counts on: the day it was settled; null otherwise. */
  budget_day: z.string().nullable(),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
  /** `allowance` for an allowance (see GrantAllowanceRequest); `request` otherwise. */
  kind: z.enum(["request", "allowance"]).optional(),
  /** A request's hold placed against an allowance: that allowance. */
  allowance_id: z.uuid().nullable().optional(),
  /** An allowance: the estimates of the requests on it that billing has recorded so far. */
  consumed_microrub: Microrub.optional(),
  /** An allowance: when its budget day ends (no request may be placed on it from then on). */
  usable_until: z.string().nullable().optional(),
  /**
   * The answer to a placement or a grant: billing-ledger's signature over what it granted (hold id,
   * kind, the service, organization, key, amount and expiry; packages/signing, grant-keys.ts). The
   * holder keeps it with its record: the books cross-check repairs a record only under it.
   */
  grant_signature: z.string().optional(),
});
export type Hold = z.infer<typeof Hold>;

export const SettleHoldRequest = z.strictObject({ amount_microrub: Microrub });
export type SettleHoldRequest = z.infer<typeof SettleHoldRequest>;

/**
 * A release of a hold that was never placed records the id as released (a tombstone), so a placement
 * that arrives late (after its caller gave up waiting) places nothing.
 */
export const ReleaseHoldRequest = z.strictObject({
  reason: withoutNul(z.string().min(1).max(200)),
  /**
   * Closing an allowance: the sum of the estimates of every request its holder placed on it. Billing
   * releases the rest once it has recorded exactly that much of the requests' settlements and releases.
   */
  used_microrub: Microrub.optional(),
});
export type ReleaseHoldRequest = z.infer<typeof ReleaseHoldRequest>;

export const BalanceResponse = z.object({
  organization_id: z.uuid(),
  balance_microrub: SignedMicrorub,
  reserved_microrub: Microrub,
  available_microrub: SignedMicrorub,
});
export type BalanceResponse = z.infer<typeof BalanceResponse>;

/**
 * Many hold operations in one call. A busy caller batches its concurrent
 * requests' holds and settlements into one round trip (each socket write is the dearest thing on the
 * path); each operation succeeds or fails on its own.
 */
export const HoldOp = z.discriminatedUnion("op", [
  PlaceHoldRequest.extend({ op: z.literal("place") }),
  // A request's hold placed on an allowance names it, as its command on the bus does: a holder whose
  // bus is down hands its commands over here instead (docs/api.md, "Allowances").
  // The request log's fields ride along too (docs/api.md "Request log").
  // The organization of the hold's key: a release of an id billing never saw keeps it under that organization.
  SettleHoldRequest.extend({
    op: z.literal("settle"),
    hold_id: z.uuid(),
    organization_id: z.uuid().optional(),
    allowance: AllowanceSpend.optional(),
    log: RequestLogFields.optional(),
  }),
  ReleaseHoldRequest.extend({
    op: z.literal("release"),
    hold_id: z.uuid(),
    organization_id: z.uuid().optional(),
    allowance: AllowanceSpend.optional(),
    log: RequestLogFields.optional(),
  }),
  GrantAllowanceRequest.extend({ op: z.literal("grant") }),
]);
export type HoldOp = z.infer<typeof HoldOp>;

export const HoldOpsRequest = z.strictObject({ ops: z.array(HoldOp).min(1).max(500) });
export type HoldOpsRequest = z.infer<typeof HoldOpsRequest>;

export const HoldOpResult = z.union([
  z.object({ ok: z.literal(true), hold: Hold }),
  z.object({
    ok: z.literal(false),
    error: z.object({
      status: z.number().int(),
      code: z.string(),
      message: z.string(),
      /** A refusal that money parked in allowances caused: it may succeed once they are returned. */
      retry_after_seconds: z.number().int().positive().optional(),
    }),
  }),
]);
export type HoldOpResult = z.infer<typeof HoldOpResult>;

export const HoldOpsResponse = z.object({ results: z.array(HoldOpResult) });
export type HoldOpsResponse = z.infer<typeof HoldOpsResponse>;

/** What services call on billing-ledger (signed service identity). */
export const BillingEndpoints = {
  /** The gateway: who a key belongs to (401 `invalid_api_key` for an unknown or revoked key). */
  verifyKey: endpoint("POST", "/internal/v1/keys/verify", VerifyKeyRequest, VerifyKeyResponse),
  /** The tariff catalog with providers, for pricing without a round trip per request. */
  catalog: endpoint("GET", "/internal/v1/catalog", undefined, Catalog),
  /** Placements, settlements and releases of concurrent requests, in one round trip and one commit. */
  holdOps: endpoint("POST", "/internal/v1/hold-ops", HoldOpsRequest, HoldOpsResponse),
  /** The gateway: refusals of authenticated keys, collected and sent in batches, for the request log. */
  recordRefusals: endpoint("POST", "/internal/v1/request-log/refusals", RecordRefusalsRequest, RecordRefusalsResponse),
  /** One hold as billing has it (404 when never placed nor released). */
};

/**
 * The hold audit: billing asks a hold's owner (the service named by its `source`) what became of the
 * records behind holds that stayed active for minutes. Per hold the owner answers: `pending` (it is
 * still working on it and will resolve it), `settle` / `release` (its record is final and this is
 * the resolution it decided; billing applies it), `absent` (no record of the owner holds this
 * hold: billing releases it, saying so in the ledger), or `unknown` (no record holds it, but the hold
 * was placed before the owner's restore point, so its record may be among those the restore lost:
 * billing keeps the hold as it is and reports it; docs/api.md, "Backups and the books cross-check").
 */
export const HoldAuditRequest = z.strictObject({
  holds: z
    .array(z.strictObject({ hold_id: z.uuid(), owner_ref: z.string().min(1).max(200), placed_at: z.iso.datetime().optional() }))
    .min(1)
    .max(500),
});
export type HoldAuditRequest = z.infer<typeof HoldAuditRequest>;

export const HoldAuditVerdict = z.discriminatedUnion("status", [
  z.object({ hold_id: z.uuid(), status: z.literal("pending") }),
  z.object({ hold_id: z.uuid(), status: z.literal("settle"), amount_microrub: Microrub }),
  z.object({
    hold_id: z.uuid(),
    status: z.literal("release"),
    reason: z.string().min(1).max(200),
    /** An allowance its holder closed: the estimates it placed on it (billing closes it as the holder's release would). */
    used_microrub: Microrub.optional(),
  }),
  z.object({ hold_id: z.uuid(), status: z.literal("absent") }),
  z.object({ hold_id: z.uuid(), status: z.literal("unknown") }),
]);
export type HoldAuditVerdict = z.infer<typeof HoldAuditVerdict>;

export const HoldAuditResponse = z.object({ verdicts: z.array(HoldAuditVerdict) });
export type HoldAuditResponse = z.infer<typeof HoldAuditResponse>;

/** Where a page of an owner's final holds starts: after this record, in (final_at, owner_ref) order. */
export const FinalHoldsCursor = z.strictObject({ final_at: z.iso.datetime(), owner_ref: z.uuid() });
export type FinalHoldsCursor = z.infer<typeof FinalHoldsCursor>;

/** The books cross-check asks a hold's owner for its final records, a page at a time. */
export const FinalHoldsRequest = z.strictObject({
  after: FinalHoldsCursor.nullable(),
  limit: z.number().int().min(1).max(500),
});
export type FinalHoldsRequest = z.infer<typeof FinalHoldsRequest>;

/**
 * One final record as its owner committed it: everything billing needs to place and settle the hold
 * in one step when its own record of it was lost (a restored database). `settled` charges
 * `settled_microrub`; `released` charges nothing.
 */
export const FinalHold = z.object({
  hold_id: z.uuid(),
  owner_ref: z.uuid(),
  organization_id: z.uuid(),
  key_id: z.uuid(),
  operation: Operation,
  model: z.string().min(1),
  amount_microrub: Microrub,
  status: z.enum(["settled", "released"]),
  settled_microrub: Microrub.nullable(),
  final_at: z.iso.datetime(),
  /** A request's hold placed on an allowance: billing repairs it as its command would have. */
  allowance: AllowanceSpend.nullable().optional(),
  /**
   * billing-ledger's grant that covers the record, as the owner kept it: the signature its placement
   * was answered with, or, for a request on an allowance, the allowance's, with the amount granted.
   * Null for a record without one (made before grants were signed): never repaired automatically.
   */
  grant: z
    .object({ amount_microrub: Microrub, signature: z.string().min(1).max(200) })
    .nullable()
    .optional(),
});
export type FinalHold = z.infer<typeof FinalHold>;

export const FinalHoldsResponse = z.object({
  holds: z.array(FinalHold),
  next: FinalHoldsCursor.nullable(),
  /**
   * The owner's restore point: when it first ran on its current database after that database was
   * restored from a backup (null when it never was). Records it finished before then may be lost.
   */
  restored_at: z.iso.datetime().nullable(),
});
export type FinalHoldsResponse = z.infer<typeof FinalHoldsResponse>;

/**
 * Allowances a holder's final records name that billing-ledger has no open record of (its database
 * was restored from before their grant, or it returned them): the holder places no more requests on
 * them and closes them, and its next request on the key gets a new grant. Answers the ids it closed now.
 */
export const UnknownAllowancesRequest = z.strictObject({ allowance_ids: z.array(z.uuid()).min(1).max(500) });
export type UnknownAllowancesRequest = z.infer<typeof UnknownAllowancesRequest>;
export const UnknownAllowancesResponse = z.object({ closed: z.array(z.uuid()) });
export type UnknownAllowancesResponse = z.infer<typeof UnknownAllowancesResponse>;

/** What a service that holds allowances (text) serves to billing-ledger beside HoldOwnerEndpoints. */
export const AllowanceHolderEndpoints = {
  unknownAllowances: endpoint("POST", "/internal/v1/allowances/unknown", UnknownAllowancesRequest, UnknownAllowancesResponse),
};

/** What every service that places holds serves to billing-ledger. */
export const HoldOwnerEndpoints = {
  audit: endpoint("POST", "/internal/v1/hold-audit", HoldAuditRequest, HoldAuditResponse),
  /** The owner's final records, oldest first: the books cross-check's source of truth for what a client was told. */
  finalHolds: endpoint("POST", "/internal/v1/final-holds", FinalHoldsRequest, FinalHoldsResponse),
};
