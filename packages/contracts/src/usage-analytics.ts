import { z } from "zod";
import { Microrub } from "./money";
import { withoutNul } from "./text-field";

/**
 * Usage over time (docs/api.md "Analytics"), read from the request log's hourly roll-up: requests,
 * tokens, units, spend and errors per hour of a few days or per budget day of a range, grouped by key
 * or by model. A member's chosen organization in the cabinet, any organization for the operator.
 */

const BudgetDay = z.iso.date().describe("a budget day, YYYY-MM-DD in BUDGET_TIMEZONE");

/** Days of hourly figures one answer may span (7 x 24 buckets per group). */
export const ANALYTICS_MAX_HOURLY_DAYS = 7;
/** Days of daily figures one answer may span. */
export const ANALYTICS_MAX_DAYS = 366;

export const AnalyticsGranularity = z.enum(["hour", "day"]);
export type AnalyticsGranularity = z.infer<typeof AnalyticsGranularity>;
export const AnalyticsGrouping = z.enum(["none", "key", "model"]);
export type AnalyticsGrouping = z.infer<typeof AnalyticsGrouping>;

/**
 * The window is the budget days `from` to `to`, both included (default: the 30 days ending today, or
 * today alone by the hour); hourly at most 7 days, daily at most 366.
 */
export const AnalyticsQuery = z
  .strictObject({
    granularity: AnalyticsGranularity.default("day"),
    group_by: AnalyticsGrouping.default("none"),
    from: BudgetDay.optional(),
    to: BudgetDay.optional(),
    key_id: z.uuid().optional(),
    model_prefix: withoutNul(z.string().min(1).max(200)).optional(),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: "the first day must not be after the last", path: ["from"] })
  .refine((q) => !q.from || !q.to || spanDays(q.from, q.to) <= (q.granularity === "hour" ? ANALYTICS_MAX_HOURLY_DAYS : ANALYTICS_MAX_DAYS), {
    message: `at most ${ANALYTICS_MAX_HOURLY_DAYS} days by the hour, ${ANALYTICS_MAX_DAYS} by the day`,
    path: ["to"],
  });
export type AnalyticsQuery = z.infer<typeof AnalyticsQuery>;

/** Days from `from` to `to`, both counted. */
export function spanDays(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
}

/** One bucket's figures (or a total). `requests` = succeeded + failed + refused; errors are the last two. */
export const AnalyticsFigures = z.object({
  requests: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  refused: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  /** Media requests' tariff units (pages, images, characters...), summed. */
  units: z.number().int(),
  cost_microrub: Microrub,
});
export type AnalyticsFigures = z.infer<typeof AnalyticsFigures>;

export const AnalyticsGroup = z.object({
  /** Grouped by key: the key; otherwise null. */
  key: z.object({ id: z.uuid(), name: z.string().nullable() }).nullable(),
  /** Grouped by model: the model (null for refusals that named none); otherwise null. */
  model: z.string().nullable(),
  /** One per bucket, in the order of `buckets`. */
  points: z.array(AnalyticsFigures),
  totals: AnalyticsFigures,
});
export type AnalyticsGroup = z.infer<typeof AnalyticsGroup>;

export const AnalyticsReport = z.object({
  object: z.literal("analytics"),
  organization_id: z.uuid(),
  timezone: z.string(),
  granularity: AnalyticsGranularity,
  group_by: AnalyticsGrouping,
  from: BudgetDay,
  to: BudgetDay,
  /** Each bucket's start: an ISO 8601 instant for hours, a budget day for days. */
  buckets: z.array(z.string()),
  /** Biggest spend first; one group, all together, when not grouped. */
  groups: z.array(AnalyticsGroup),
  totals: AnalyticsFigures,
});
export type AnalyticsReport = z.infer<typeof AnalyticsReport>;

/** The CSV's columns: one line per bucket and group. */
export const ANALYTICS_CSV_COLUMNS = [
  "bucket",
  "key_id",
  "key_name",
  "model",
  "requests",
  "succeeded",
  "failed",
  "refused",
  "input_tokens",
  "output_tokens",
  "units",
  "cost_microrub",
] as const;

/** A key's recent use, from the request log (its entries, refusals counted as many times as repeated). */
export const KeyActivity = z.object({
  /** The latest request of the key the log has (a refusal included); null when none. */
  last_used_at: z.string().nullable(),
  requests_today: z.number().int(),
  requests_7d: z.number().int(),
  errors_7d: z.number().int(),
  /** The last 7 budget days, oldest first, today last. */
  daily: z.array(z.object({ day: z.string(), requests: z.number().int(), errors: z.number().int(), cost_microrub: Microrub })),
});
export type KeyActivity = z.infer<typeof KeyActivity>;

/**
 * Whether the key's next typical request fits (the honest budget bar): its estimate is the median
 * estimate of the key's last 20 requests that reserved, against the room left (what its daily budget
 * and its organization's available balance both still allow). Null before the key's first such request.
 */
export const NextRequest = z.object({
  estimated_cost_microrub: Microrub,
  room_microrub: Microrub,
  fits: z.boolean(),
});
export type NextRequest = z.infer<typeof NextRequest>;
