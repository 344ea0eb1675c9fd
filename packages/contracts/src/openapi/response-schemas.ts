import { z } from "zod";
import { Operations } from "../catalog";
import { ErrorCatalog, type ErrorCode } from "../errors";
import { Microrub } from "../money";
import { Scope } from "../scopes";
import { BillingStatus } from "../text";
import { KeyActivity, NextRequest } from "../usage-analytics";

/**
 * The public answers whose shape docs/api.md fixes but which the services render without a zod
 * schema of their own (the request bodies and the file and job records have theirs). Written here
 * once, for the OpenAPI document; fields a service adds beyond them stay allowed (`looseObject`).
 */
export const ErrorCodeSchema = z
  .enum(Object.keys(ErrorCatalog) as [ErrorCode, ...ErrorCode[]])
  .describe("A code of the one error catalog (packages/contracts/src/errors.ts)");

export const ErrorBody = z
  .looseObject({
    type: z.literal("error").optional().describe("On /v1/messages, so Anthropic clients parse it"),
    error: z.object({ code: ErrorCodeSchema, message: z.string(), request_id: z.string(), type: z.string() }),
  })
  .describe("Every error: `{error: {code, message, request_id, type}}`; every response carries x-request-id");

export const BillingObject = z
  .object({ status: BillingStatus, estimated_cost_microrub: Microrub, cost_microrub: Microrub.nullable() })
  .describe("reserved: hold active, outcome not final; settled: charged cost_microrub; released: nothing charged");

export const PendingObject = z
  .object({
    id: z.string(),
    type: z.literal("pending"),
    status: z.enum(["in_progress", "reconciling"]),
    billing: z.object({ status: z.literal("reserved"), estimated_cost_microrub: Microrub.nullable(), cost_microrub: z.null() }),
  })
  .describe("202: the work goes on; repeat the request with the same Idempotency-Key and body after Retry-After");

export const MessageResponse = z.looseObject({
  id: z.string(),
  type: z.literal("message"),
  role: z.literal("assistant"),
  model: z.string(),
  content: z.array(z.looseObject({ type: z.literal("text"), text: z.string() })),
  stop_reason: z.string().nullable(),
  usage: z.looseObject({ input_tokens: z.int().nonnegative(), output_tokens: z.int().nonnegative() }),
  billing: BillingObject,
});

export const ResponseObject = z.looseObject({
  id: z.string(),
  object: z.literal("response"),
  created_at: z.number(),
  status: z.literal("completed"),
  model: z.string(),
  output: z.array(
    z.looseObject({
      type: z.literal("message"),
      id: z.string(),
      role: z.literal("assistant"),
      status: z.literal("completed"),
      content: z.array(z.looseObject({ type: z.literal("output_text"), text: z.string(), annotations: z.array(z.unknown()) })),
    }),
  ),
  usage: z.looseObject({ input_tokens: z.int().nonnegative(), output_tokens: z.int().nonnegative(), total_tokens: z.int().nonnegative() }),
  billing: BillingObject,
});

export const ChatQuote = z.looseObject({
  object: z.literal("quote"),
  model: z.string(),
  estimated_cost_microrub: Microrub,
  input_tokens: z.int().nonnegative(),
  max_output_tokens: z.int().nonnegative(),
  expires_at: z.string(),
  valid_for_s: z.literal(30),
});

export const PublicModel = z.looseObject({
  id: z.string(),
  object: z.literal("model"),
  type: z.literal("model"),
  display_name: z.string(),
  created: z.int(),
  owned_by: z.string(),
  operations: Operations,
});

export const ModelList = z.looseObject({ object: z.literal("list"), data: z.array(PublicModel), has_more: z.boolean() });

export const User = z.looseObject({ id: z.uuid(), email: z.string() });
export const Organization = z.looseObject({
  id: z.uuid(),
  name: z.string(),
  low_balance_microrub: Microrub.nullable().optional().describe("`balance.low` is sent when the available balance falls under it; null: never"),
});
export const Balance = z.looseObject({ balance_microrub: Microrub, reserved_microrub: Microrub, available_microrub: Microrub });
export const ApiKey = z.looseObject({
  id: z.uuid(),
  key: z.string().optional().describe("Only in the answer to its creation: shown once"),
  prefix: z.string(),
  scopes: z.array(Scope),
  name: z.string().nullable(),
  daily_budget_microrub: Microrub,
  status: z.enum(["active", "revoked", "expired"]),
  created_at: z.string(),
  expires_at: z.string().nullable().describe("From then on the key is refused like a revoked one; null: never"),
  budget_alert_percents: z.array(z.int()).describe("Percents of the daily budget whose crossing sends `budget.threshold`"),
});
/** One key as `GET /admin/v1/keys/{key_id}` answers it: with its recent activity and whether its next request fits. */
export const ApiKeyDetail = ApiKey.extend({ activity: KeyActivity, next_request: NextRequest.nullable() });
export const KeyUsage = z.looseObject({ day: z.string(), spent_microrub: Microrub, reserved_microrub: Microrub, daily_budget_microrub: Microrub });
export const LedgerEntry = z.looseObject({
  id: z.int(),
  object: z.literal("ledger_entry"),
  organization_id: z.uuid(),
  key_id: z.uuid().nullable(),
  hold_id: z.string().nullable(),
  kind: z.string(),
  amount_microrub: z.int(),
  balance_after_microrub: z.int(),
  reserved_after_microrub: z.int(),
  reference: z.string().nullable(),
  created_at: z.string(),
});
export const LedgerPage = z.looseObject({ data: z.array(LedgerEntry) });
/** A user added to an organization. */
export const Membership = z.looseObject({ organization_id: z.uuid(), user_id: z.uuid(), created_at: z.string() });
/** The books cross-check's report: per owner what was compared, and each difference found (docs/api.md). */
export const CrossCheckReport = z.looseObject({
  owners: z.array(z.looseObject({ source: z.string(), compared: z.int().nonnegative(), unreachable: z.boolean() })),
  differences: z.array(z.looseObject({})),
});
/** An operator's repair by hand of one record the cross-check reported. */
export const HandRepair = z.looseObject({ difference: z.looseObject({ hold_id: z.uuid(), kind: z.string(), repaired: z.boolean() }), outcome: z.string() });

/** The body of POST /mcp: one JSON-RPC 2.0 message (docs/mcp.md lists the tools). */
export const JsonRpcRequest = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number()]).optional(),
  method: z.string(),
  params: z.unknown().optional(),
});
