import { z } from "zod";
import { Microrub } from "./money";
import { withoutNul } from "./text-field";

/**
 * The request log (docs/api.md "Request log"): one entry per paid request, written by billing-ledger in
 * the transaction that applies the request's settle or release command, from the fields the owner
 * (text, media-jobs) carries on that command. Kept 90 days.
 */

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
});
export type RequestLogFields = z.infer<typeof RequestLogFields>;

/** `succeeded`: charged (settled); `failed`: nothing charged (released). */
export const RequestOutcome = z.enum(["succeeded", "failed"]);
export type RequestOutcome = z.infer<typeof RequestOutcome>;

export const RequestLogEntry = z.object({
  /** The request's hold id. */
  id: z.uuid(),
  object: z.literal("request"),
  created_at: z.string(),
  completed_at: z.string(),
  key: z.object({ id: z.uuid(), name: z.string().nullable() }),
  endpoint: z.string(),
  model: z.string(),
  status: z.number().int(),
  outcome: RequestOutcome,
  usage: RequestLogUsage,
  estimated_cost_microrub: Microrub,
  cost_microrub: Microrub,
  latency_ms: z.object({ total: z.number().int(), upstream: z.number().int().nullable() }),
  request_id: z.string().nullable(),
  idempotency_key: z.string().nullable(),
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
  model: withoutNul(z.string().min(1).max(200)).optional(),
  /** An HTTP status (`200`, `502`, `202`) or an outcome (`succeeded`, `failed`). */
  status: z.union([z.literal("succeeded"), z.literal("failed"), z.string().regex(/^[1-5][0-9]{2}$/, "an HTTP status or succeeded/failed")]).optional(),
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
] as const;
