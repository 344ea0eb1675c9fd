import { z } from "zod";
import { FilesJobRequest, ImageEditJobRequest, MediaQuoteRequest, TextAnalysisJobRequest } from "./media";
import { Microrub } from "./money";
import type { Scope } from "./scopes";
import { ChatQuoteRequest, MessagesRequest, ResponsesRequest } from "./text";

/**
 * The MCP endpoint's tools (CONTRACT.md "MCP"): the name, the rights a key needs to see and call each,
 * and the zod schemas of their arguments and structured results. Read tools need `mcp:read`; paid tools
 * need `mcp:invoke` plus the right of their operation, and call the public API with the caller's key,
 * so the API's own scope checks, holds, budget and idempotency apply on top.
 */

export const McpToolName = z.enum([
  "list_models",
  "quote_text",
  "quote_media",
  "get_job",
  "list_files",
  "get_file",
  "create_message",
  "create_response",
  "edit_image",
  "analyze_image",
  "ocr",
  "analyze_text",
]);
export type McpToolName = z.infer<typeof McpToolName>;

/** Every right a key needs for a tool: it is listed and callable only when the key holds all of them. */
export const MCP_TOOL_SCOPES: Record<McpToolName, readonly Scope[]> = {
  list_models: ["mcp:read"],
  quote_text: ["mcp:read"],
  quote_media: ["mcp:read"],
  get_job: ["mcp:read"],
  list_files: ["mcp:read"],
  get_file: ["mcp:read"],
  create_message: ["mcp:invoke", "text"],
  create_response: ["mcp:invoke", "text"],
  edit_image: ["mcp:invoke", "images"],
  analyze_image: ["mcp:invoke", "images"],
  ocr: ["mcp:invoke", "text"],
  analyze_text: ["mcp:invoke", "text"],
};

/**
 * Codes a tool result with `isError: true` carries besides the public API's own (which pass through
 * unchanged: `insufficient_balance`, `daily_budget_exceeded`, `media_disabled`, ...).
 */
export const McpToolErrorCode = {
  /** Over the active-call limit of the organization (2, across every MCP process) or of the process (4). */
  busy: "mcp_busy",
  /** The serialized result would exceed the result limit (512 KiB). */
  resultTooLarge: "result_too_large",
} as const;

/** The `error` of a failed tool call's structured content. */
export const McpToolError = z.object({
  code: z.string().describe("machine-readable code: mcp_busy, result_too_large, or the public API's error code"),
  message: z.string(),
  http_status: z.int().optional().describe("status of the public API answer this error came from"),
  request_id: z.string().optional(),
  retry_after_s: z.int().nonnegative().optional().describe("wait this long before trying again"),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type McpToolError = z.infer<typeof McpToolError>;

/**
 * A tool's structured result: its own fields on success, `error` (and whatever context helps, such as
 * the idempotency key) on failure. Every field is optional so one schema describes both.
 */
function toolOutput<S extends z.ZodRawShape>(shape: S) {
  return z
    .object(shape)
    .partial()
    .extend({ error: McpToolError.optional().describe("set only when isError is true") });
}

const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
  .describe(
    "One stable key per logical request. Repeating a call with the same key and the same arguments replays its result and charges once. Omit it and one is generated and returned.",
  );

const ModelId = z.string().min(1).max(128).describe("a public model id from list_models");
const MaxCost = Microrub.describe("refuse (422 max_cost_exceeded, nothing reserved) when the estimate is above this many microrubles; copy it from a quote");

// ---------------------------------------------------------------- read tools

export const ListModelsInput = z.strictObject({});
export const ListModelsOutput = toolOutput({
  models: z.array(
    z.looseObject({
      id: z.string(),
      display_name: z.string().optional(),
      operations: z.record(z.string(), z.unknown()).describe("operation -> tariff in microrubles"),
    }),
  ),
});

/** The body of `POST /v1/chat/quote`, as the HTTP API takes it (streaming aside, which is never offered). */
export const QuoteTextInput = z.strictObject({ ...ChatQuoteRequest.omit({ stream: true }).shape, model: ModelId, max_cost_microrub: MaxCost.optional() });
const Quote = z.looseObject({ estimated_cost_microrub: Microrub, expires_at: z.string().optional() });
export const QuoteTextOutput = toolOutput({ quote: Quote });

export const QuoteMediaInput = z.strictObject({ ...MediaQuoteRequest.shape });
export const QuoteMediaOutput = toolOutput({ quote: Quote });

/** Where a file's bytes are: downloaded with the same API key (it needs `files:read` or `files:write`). */
export const McpFileLink = z.object({
  file_id: z.string(),
  mime_type: z.string(),
  size_bytes: z.int().nonnegative(),
  content_url: z.string().describe("GET it with the same API key in Authorization: Bearer"),
});
export type McpFileLink = z.infer<typeof McpFileLink>;

const Job = z.looseObject({
  id: z.string(),
  operation: z.string(),
  status: z.enum(["queued", "running", "succeeded", "failed"]),
  result: z.looseObject({ file_id: z.string(), mime_type: z.string(), size_bytes: z.int() }).nullable(),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
  billing: z.looseObject({}).optional(),
});

/** A job, its result file's link, and the result itself when it is short text or JSON. */
const JobFields = {
  job: Job,
  result_file: McpFileLink.optional(),
  result_text: z.string().optional().describe("the result file's content, when it is short text or JSON"),
};

export const GetJobInput = z.strictObject({ job_id: z.string().min(1).max(200) });
export const GetJobOutput = toolOutput(JobFields);

export const ListFilesInput = z.strictObject({
  limit: z.int().min(1).max(100).optional(),
  cursor: z.string().min(1).max(512).optional().describe("next_cursor of the previous page"),
});
const FileEntry = z.looseObject({
  id: z.string(),
  filename: z.string(),
  mime_type: z.string(),
  size_bytes: z.int(),
  status: z.string(),
});
export const ListFilesOutput = toolOutput({ files: z.array(FileEntry), has_more: z.boolean(), next_cursor: z.string().nullable() });

export const GetFileInput = z.strictObject({ file_id: z.string().min(1).max(200) });
export const GetFileOutput = toolOutput({ file: FileEntry, content: McpFileLink.optional().describe("present once the file is verified") });

// ---------------------------------------------------------------- paid tools

/** A paid text call that did not finish in time, or whose outcome is not known yet: repeat it with the same key. */
const Pending = z.looseObject({ status: z.string() });
const PaidStatus = z.enum(["completed", "pending"]);

/** The body of `POST /v1/messages` (streaming aside), and the call's idempotency key. */
export const CreateMessageInput = z.strictObject({
  ...MessagesRequest.omit({ stream: true }).shape,
  model: ModelId,
  idempotency_key: IdempotencyKey.optional(),
});
export const CreateMessageOutput = toolOutput({
  idempotency_key: z.string(),
  status: PaidStatus,
  text: z.string().describe("the answer's text"),
  message: z.looseObject({ id: z.string() }).describe("the /v1/messages answer, with usage and billing"),
  pending: Pending,
});

/** The body of `POST /v1/responses` (streaming aside), and the call's idempotency key. */
export const CreateResponseInput = z.strictObject({
  ...ResponsesRequest.omit({ stream: true }).shape,
  model: ModelId,
  idempotency_key: IdempotencyKey.optional(),
});
export const CreateResponseOutput = toolOutput({
  idempotency_key: z.string(),
  status: PaidStatus,
  text: z.string().describe("the answer's text"),
  response: z.looseObject({ id: z.string() }).describe("the /v1/responses answer, with usage and billing"),
  pending: Pending,
});

const JobOptions = {
  max_cost_microrub: MaxCost.optional(),
  settings: z.record(z.string(), z.unknown()).optional().describe("model-specific settings"),
  idempotency_key: IdempotencyKey.optional(),
};

/** The job bodies of the HTTP API, and the call's idempotency key; which of `file_id`/`file_ids` is the API's to check. */
export const AnalyzeImageInput = z.strictObject({ ...FilesJobRequest.shape, ...JobOptions });
export const OcrInput = AnalyzeImageInput;
export const EditImageInput = z.strictObject({ ...ImageEditJobRequest.shape, ...JobOptions });
export const AnalyzeTextInput = z.strictObject({ ...TextAnalysisJobRequest.shape, ...JobOptions });

/** A job tool's result: finished within the wait (`succeeded`/`failed`) or still going (poll get_job). */
export const JobToolOutput = toolOutput({
  idempotency_key: z.string(),
  status: z
    .enum(["queued", "running", "succeeded", "failed", "pending"])
    .describe("the job's status; pending: the request's outcome is not known yet, repeat the call with the same idempotency_key"),
  ...JobFields,
});

export const McpToolSchemas = {
  list_models: { input: ListModelsInput, output: ListModelsOutput },
  quote_text: { input: QuoteTextInput, output: QuoteTextOutput },
  quote_media: { input: QuoteMediaInput, output: QuoteMediaOutput },
  get_job: { input: GetJobInput, output: GetJobOutput },
  list_files: { input: ListFilesInput, output: ListFilesOutput },
  get_file: { input: GetFileInput, output: GetFileOutput },
  create_message: { input: CreateMessageInput, output: CreateMessageOutput },
  create_response: { input: CreateResponseInput, output: CreateResponseOutput },
  edit_image: { input: EditImageInput, output: JobToolOutput },
  analyze_image: { input: AnalyzeImageInput, output: JobToolOutput },
  ocr: { input: OcrInput, output: JobToolOutput },
  analyze_text: { input: AnalyzeTextInput, output: JobToolOutput },
} as const satisfies Record<McpToolName, { input: z.ZodObject; output: z.ZodObject }>;
