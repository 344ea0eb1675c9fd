import { z } from "zod";
import { ErrorCatalog, type ErrorCode } from "./errors";
import { Microrub } from "./money";
import { withoutNul } from "./text-field";

/**
 * The request log (docs/api.md "Request log"): one entry per paid request, written by billing-ledger in
 * the transaction that applies the request's settle or release command, from the fields the owner
 * (text, media-jobs) carries on that command; and the refusals of authenticated keys before anything
 * was reserved, which the gateway sends in batches, identical ones collapsed. Kept 90 days.
 */

/** Why a request failed or was refused: the error its client was answered with. */
export const RequestLogError = z.object({ code: z.string(), message: z.string() });
export type RequestLogError = z.infer<typeof RequestLogError>;

/** Tokens for text; the tariff's unit and how many of it for media operations. */
export const RequestLogUsage = z.union([
  z.strictObject({ input_tokens: z.number().int().nonnegative(), output_tokens: z.number().int().nonnegative() }),
  z.strictObject({ unit: z.string().min(1).max(40), quantity: z.number().int().nonnegative() }),
]);
export type RequestLogUsage = z.infer<typeof RequestLogUsage>;

/** What an owner's settle or release command carries for the log; the cost is the command's own amount. */
export const RequestLogFields = z.strictObject({
  /** The public path the client called, e.g. `/v1/messages`. */
  endpoint: z.string().min(1).max(100),
  model: z.string().min(1).max(200),
  /** The HTTP status of the request's final answer (202 for a media job, whose outcome is `outcome`). */
  status: z.number().int().min(100).max(599),
  usage: RequestLogUsage,
  estimated_cost_microrub: Microrub,
  /** When the request was accepted. */
  requested_at: z.iso.datetime({ offset: true }),
  /** From acceptance to the final outcome. */
  latency_ms: z.number().int().nonnegative(),
  /** Text: the upstream call of the attempt that answered; null when none answered or for media. */
  upstream_latency_ms: z.number().int().nonnegative().nullable(),
  request_id: z.string().max(200).nullable(),
  idempotency_key: z.string().max(255).nullable(),
  /** A failed request's error, as its client is answered (the entry's reason). */
  error: z.strictObject({ code: z.string().min(1).max(64), message: z.string().max(1000) }).optional(),
  /**
   * A media job on an upstream model: the tokens the upstream reported (what the operator paid for it,
   * beside the tariff's `usage` the customer paid), shown to the operator only.
   */
  upstream_usage: z.strictObject({ input_tokens: z.number().int().nonnegative(), output_tokens: z.number().int().nonnegative() }).optional(),
});
export type RequestLogFields = z.infer<typeof RequestLogFields>;

/**
 * `succeeded`: charged (settled); `failed`: nothing charged (released); `refused`: refused before
 * anything was reserved (nothing charged), identical refusals collapsed into one entry with a `count`.
 */
export const RequestOutcome = z.enum(["succeeded", "failed", "refused"]);
export type RequestOutcome = z.infer<typeof RequestOutcome>;

export const RequestLogEntry = z.object({
  /** The request's hold id. */
  id: z.uuid(),
  object: z.literal("request"),
  created_at: z.string(),
  completed_at: z.string(),
  key: z.object({ id: z.uuid(), name: z.string().nullable() }),
  endpoint: z.string(),
  /** Null for a refusal of a request that named no model (or one collapsed with other models). */
  model: z.string().nullable(),
  status: z.number().int(),
  outcome: RequestOutcome,
  /** Null for a refusal: nothing was measured. */
  usage: RequestLogUsage.nullable(),
  estimated_cost_microrub: Microrub,
  cost_microrub: Microrub,
  latency_ms: z.object({ total: z.number().int(), upstream: z.number().int().nullable() }),
  request_id: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  /** Why a failed or refused request was not served; null for one that succeeded. */
  error: RequestLogError.nullable(),
  /** Requests this entry stands for: 1, or the identical refusals it collapses (created_at the first, completed_at the last). */
  count: z.number().int().min(1),
  /** The operator's listings only: a media job's upstream tokens (RequestLogFields.upstream_usage), null when none. */
  upstream_usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).nullable().optional(),
});
export type RequestLogEntry = z.infer<typeof RequestLogEntry>;

export const RequestLogList = z.object({
  object: z.literal("list"),
  data: z.array(RequestLogEntry),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export type RequestLogList = z.infer<typeof RequestLogList>;

/** The filters shared by the API, the cabinet's page and its CSV. */
export const RequestLogFilter = z.strictObject({
  /** Inclusive lower bound of `created_at`. */
  from: z.iso.datetime({ offset: true }).optional(),
  /** Exclusive upper bound of `created_at`. */
  to: z.iso.datetime({ offset: true }).optional(),
  /** A model id, exactly. */
  model: withoutNul(z.string().min(1).max(200)).optional(),
  /** The start of a model id (`meter-local` finds `meter-local-echo`). */
  model_prefix: withoutNul(z.string().min(1).max(200)).optional(),
  /** An HTTP status (`200`, `502`, `429`) or an outcome (`succeeded`, `failed`, `refused`). */
  status: z
    .union([
      z.literal("succeeded"),
      z.literal("failed"),
      z.literal("refused"),
      z.string().regex(/^[1-5][0-9]{2}$/, "an HTTP status or succeeded/failed/refused"),
    ])
    .optional(),
});
export type RequestLogFilter = z.infer<typeof RequestLogFilter>;

/** `GET /v1/usage/requests`: the calling key's entries. `cursor` is the previous page's `next_cursor`. */
export const RequestLogQuery = RequestLogFilter.extend({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(200).optional(),
});
export type RequestLogQuery = z.infer<typeof RequestLogQuery>;

/** The cabinet's Requests page (and the operator's view of an organization): the same, plus a key. */
export const CabinetRequestLogFilter = RequestLogFilter.extend({ key_id: z.uuid().optional() });
export type CabinetRequestLogFilter = z.infer<typeof CabinetRequestLogFilter>;
export const CabinetRequestLogQuery = CabinetRequestLogFilter.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().min(1).max(200).optional(),
});
export type CabinetRequestLogQuery = z.infer<typeof CabinetRequestLogQuery>;

/** The CSV's columns, in order: one line per entry, the page's rows as they are listed. */
export const REQUEST_LOG_CSV_COLUMNS = [
  "created_at",
  "key_id",
  "key_name",
  "endpoint",
  "model",
  "status",
  "outcome",
  "input_tokens",
  "output_tokens",
  "unit",
  "quantity",
  "estimated_cost_microrub",
  "cost_microrub",
  "latency_ms",
  "upstream_latency_ms",
  "request_id",
  "idempotency_key",
  "id",
  "error_code",
  "error_message",
  "count",
] as const;

/** What a filter of the log adds up to, every page of it (the Requests page's totals). */
export const RequestLogTotals = z.object({
  object: z.literal("request_totals"),
  /** Requests in all: each refusal counted as many times as it was repeated. */
  requests: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  refused: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cost_microrub: Microrub,
});
export type RequestLogTotals = z.infer<typeof RequestLogTotals>;

/**
 * The statuses of the refusals that are logged (docs/api.md "Request log"): an authenticated key's
 * request refused before anything was reserved. 401 (no key), 403, 405-408 and 5xx are not.
 */
export const LOGGED_REFUSAL_STATUSES = [400, 402, 404, 409, 413, 415, 422, 429] as const;
export type LoggedRefusalStatus = (typeof LOGGED_REFUSAL_STATUSES)[number];

/** The catalog's codes of those statuses: a refusal entry's `error.code` is one of them. */
export const REFUSAL_CODES = (Object.keys(ErrorCatalog) as ErrorCode[]).filter((c) =>
  (LOGGED_REFUSAL_STATUSES as readonly number[]).includes(ErrorCatalog[c]),
) as [ErrorCode, ...ErrorCode[]];

/**
 * Refusals a key may have itemized per hour, each with its own endpoint, model and code; past it the
 * key's refusals of that hour collapse by status and code alone (model null). So a key has at most
 * this many plus one per refusal code of refusal entries an hour, whatever it sends.
 */
export const REFUSAL_ENTRIES_PER_KEY_HOUR = 20;

/**
 * Refusals as the gateway collected them: identical ones (key, endpoint, status, code, model) counted
 * together between its first and last time. Text fields are made storable by the sender (no NUL, no
 * lone surrogate) and cut to their limits.
 */
export const RefusalRecord = z.strictObject({
  key_id: z.uuid(),
  endpoint: z.string().min(1).max(100),
  model: withoutNul(z.string().min(1).max(200)).nullable(),
  status: z.literal(LOGGED_REFUSAL_STATUSES),
  code: z.enum(REFUSAL_CODES),
  message: withoutNul(z.string().max(500)),
  count: z.number().int().min(1).max(2_147_483_647),
  first_at: z.iso.datetime(),
  last_at: z.iso.datetime(),
  request_id: z.string().max(200).nullable(),
});
export type RefusalRecord = z.infer<typeof RefusalRecord>;

export const RecordRefusalsRequest = z.strictObject({ refusals: z.array(RefusalRecord).min(1).max(500) });
export type RecordRefusalsRequest = z.infer<typeof RecordRefusalsRequest>;
export const RecordRefusalsResponse = z.object({ recorded: z.number().int() });
export type RecordRefusalsResponse = z.infer<typeof RecordRefusalsResponse>;
