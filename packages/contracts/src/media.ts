import { z } from "zod";
import { Microrub } from "./money";
import { Unit } from "./scopes";
import { BillingStatus } from "./text";

/**
 * Public media job and quote schemas (spec "Media job requests", "Media quote"; docs/api.md "Media
 * jobs"). Strict: an unknown field is 400 `unknown_field` before anything is reserved. What a model
 * accepts in `settings` and `prompt` is the model's own (400 `unsupported_parameter`), checked by the
 * media-jobs service against its registry.
 */

/** The operations a job runs. */
export const MediaOperation = z.enum(["image_edit", "image_analysis", "ocr", "text_analysis"]);
export type MediaOperation = z.infer<typeof MediaOperation>;

/** What `/v1/quotes` prices: every job operation, and image generation (quoted from its tariff only). */
export const QuotedOperation = z.enum(["image_generation", ...MediaOperation.options]);
export type QuotedOperation = z.infer<typeof QuotedOperation>;

/**
 * A file id as given; one that is not a UUID names no file of anyone's, which is 404 `file_not_found`
 * like any other missing file, not a malformed request.
 */
const FileRef = z.string().min(1).max(200);
const FileRefs = z.array(FileRef).min(1).max(100);
/** Keys are the model's to accept or refuse (400 `unsupported_parameter`). */
const Settings = z.record(z.string(), z.unknown());

const common = {
  model: z.string().min(1).max(128),
  max_cost_microrub: Microrub.optional(),
  settings: Settings.optional(),
};

/** `file_id` or `file_ids`, exactly one of them. */
function oneSource(body: { file_id?: string | undefined; file_ids?: string[] | undefined }, ctx: z.RefinementCtx): void {
  if (body.file_id !== undefined && body.file_ids !== undefined) {
    ctx.addIssue({ code: "custom", path: ["file_ids"], message: "give file_id or file_ids, not both" });
  } else if (body.file_id === undefined && body.file_ids === undefined) {
    ctx.addIssue({ code: "custom", path: ["file_id"], message: "required: file_id or file_ids" });
  }
}

/**
 * An edit's prompt: as long as the longest any model takes (an Images API model's 32,000 characters);
 * each model checks its own limit (the local engine's grammar: 1,000) before anything is reserved.
 */
export const EditPrompt = z.string().min(1).max(32_000);

/** `POST /v1/images/edits`. */
export const ImageEditJobRequest = z.strictObject({ ...common, prompt: EditPrompt, file_id: FileRef });
export type ImageEditJobRequest = z.infer<typeof ImageEditJobRequest>;

/** `POST /v1/images/analysis` and `POST /v1/ocr`. */
export const FilesJobRequest = z.strictObject({ ...common, file_id: FileRef.optional(), file_ids: FileRefs.optional() }).superRefine(oneSource);
export type FilesJobRequest = z.infer<typeof FilesJobRequest>;

/** `POST /v1/text/analysis`. */
export const TextAnalysisJobRequest = z.strictObject({ ...common, input: z.string() });
export type TextAnalysisJobRequest = z.infer<typeof TextAnalysisJobRequest>;

/**
 * `POST /v1/quotes`: the fields of the job being quoted, plus `operation`. An image edit is quoted without
 * a file (its tariff is per request); the other jobs need the inputs their quantity is counted from.
 */
export const MediaQuoteRequest = z
  .strictObject({
    ...common,
    operation: QuotedOperation,
    prompt: EditPrompt.optional(),
    file_id: FileRef.optional(),
    file_ids: FileRefs.optional(),
    input: z.string().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.file_id !== undefined && body.file_ids !== undefined) {
      ctx.addIssue({ code: "custom", path: ["file_ids"], message: "give file_id or file_ids, not both" });
    }
  });
export type MediaQuoteRequest = z.infer<typeof MediaQuoteRequest>;

export const MediaQuote = z.object({
  object: z.literal("quote"),
  model: z.string(),
  operation: QuotedOperation,
  unit: Unit,
  quantity: z.int().nonnegative(),
  price_per_unit_microrub: Microrub,
  estimated_cost_microrub: Microrub,
  expires_at: z.string(),
  valid_for_s: z.literal(30),
});
export type MediaQuote = z.infer<typeof MediaQuote>;

/** The states a client sees (docs/api.md "The job record"); a cancelled job is `failed` with error code `cancelled`. */
export const JobStatus = z.enum(["queued", "running", "succeeded", "failed"]);
export type JobStatus = z.infer<typeof JobStatus>;

/**
 * Why a job failed, in `error.code`: a contract code where one fits, plus `invalid_input` (an input the
 * model could not process, found only when it ran), `cancelled` (by the client while queued) and
 * `internal_error` (the job was interrupted too often). The billing codes appear only when a hold whose
 * placement had an unknown outcome turned out to be refused. Every failed job has its hold released.
 */
export const JobErrorCode = z.enum([
  "invalid_input",
  "insufficient_balance",
  "daily_budget_exceeded",
  "invalid_api_key",
  "unsupported_parameter",
  "unsupported_media_type",
  "payload_too_large",
  "cost_unknown",
  "file_not_found",
  "file_not_verified",
  "model_unavailable",
  /** The upstream model failed after failover (an error, a refusal, an answer that is no result), or its connection was lost. */
  "upstream_error",
  /** The upstream did not answer within the job's time; it may have run the job. */
  "upstream_timeout",
  "cancelled",
  "internal_error",
]);
export type JobErrorCode = z.infer<typeof JobErrorCode>;

export const JobRecord = z.object({
  id: z.uuid(),
  object: z.literal("job"),
  operation: MediaOperation,
  model: z.string(),
  status: JobStatus,
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
  /** The one result file, downloadable at `GET /v1/files/{file_id}/content`. */
  result: z.object({ file_id: z.uuid(), mime_type: z.string(), size_bytes: z.int().nonnegative() }).nullable(),
  error: z.object({ code: JobErrorCode, message: z.string() }).nullable(),
  billing: z.object({ status: BillingStatus, estimated_cost_microrub: Microrub, cost_microrub: Microrub.nullable() }),
  /** How far it is: pages, images, edit steps or analysis tasks. */
  progress: z.object({ done: z.int().nonnegative(), total: z.int().nonnegative(), unit: z.string() }),
  /** When the result file expires (and is deleted); null until there is one. */
  expires_at: z.string().nullable(),
  /** The billed unit and the quantity measured at acceptance (the hold); settlement counts what ran. */
  usage: z.object({ unit: Unit, quantity: z.int().nonnegative() }),
  /** The input files, in order. */
  file_ids: z.array(z.uuid()),
  /** Image edits: the instruction plan parsed from `prompt`, as it runs. */
  plan: z.unknown().optional(),
});
export type JobRecord = z.infer<typeof JobRecord>;

/** `GET /v1/jobs`: the caller's user's jobs, newest first; `after` is the last id of the previous page. */
export const ListJobsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().min(1).max(200).optional(),
});
export type ListJobsQuery = z.infer<typeof ListJobsQuery>;

export const JobList = z.object({
  object: z.literal("list"),
  data: z.array(JobRecord),
  has_more: z.boolean(),
  first_id: z.uuid().nullable(),
  last_id: z.uuid().nullable(),
});
export type JobList = z.infer<typeof JobList>;
