import { z } from "zod";
import { EditPrompt, ImageEditJobRequest, MediaQuoteRequest, TextAnalysisJobRequest } from "./media";
import { Microrub } from "./money";
import type { Scope } from "./scopes";
import { ChatQuoteRequest, MessagesRequest, ResponsesRequest } from "./text";

/**
 * The MCP endpoint's tools (docs/mcp.md "Tools"): the name, the rights a key needs to see and call each,
 * and the zod schemas of their arguments and structured results. Read tools need `mcp:read`, paid tools
 * `mcp:invoke`, each plus the right of the endpoint it calls; they call the public API with the caller's
 * key, so the API's own scope checks, holds, budget and idempotency apply on top.
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

/**
 * The rights a key needs for a tool, as groups: it must hold at least one scope of every group. The
 * tool's own group (`mcp:read` or `mcp:invoke`) and the right of the endpoint it calls, so a tool is
 * listed and callable exactly when the call can succeed as far as rights go.
 */
export const MCP_TOOL_SCOPES: Record<McpToolName, readonly (readonly Scope[])[]> = {
  list_models: [["mcp:read"]],
  quote_text: [["mcp:read"], ["text"]],
  quote_media: [["mcp:read"], ["images", "text"]],
  get_job: [["mcp:read"], ["images", "text"]],
  list_files: [["mcp:read"], ["files:read", "files:write"]],
  get_file: [["mcp:read"], ["files:read", "files:write"]],
  create_message: [["mcp:invoke"], ["text"]],
  create_response: [["mcp:invoke"], ["text"]],
  edit_image: [["mcp:invoke"], ["images"]],
  analyze_image: [["mcp:invoke"], ["images"]],
  ocr: [["mcp:invoke"], ["text"]],
  analyze_text: [["mcp:invoke"], ["text"]],
};

/**
 * Codes a tool result with `isError: true` carries besides the public API's own (which pass through
 * unchanged: `insufficient_balance`, `daily_budget_exceeded`, `media_disabled`, ...).
 */
export const McpToolErrorCode = {
  /** Over the active-call limit of the organization (2, across every MCP process) or of the process (4). */
  busy: "mcp_busy",
  /** A result over the limit (512 KiB) that could not be stored for download: repeat the call with its key. */
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

/** Where a result too large for one tool result is kept in full (docs/mcp.md "Sizes"). */
export const McpFullResult = z.object({
  result_id: z.string(),
  mime_type: z.literal("application/json"),
  size_bytes: z.int().nonnegative().describe("size of the stored JSON: the whole structured result"),
  content_url: z.string().describe("GET it with the same API key in Authorization: Bearer; kept for 7 days"),
});
export type McpFullResult = z.infer<typeof McpFullResult>;

/**
 * A tool's structured result: its own fields on success, `error` (and whatever context helps, such as
 * the idempotency key) on failure. Every field is optional so one schema describes both. A result over
 * the size limit keeps its small fields, `full_result` links the whole of it and `preview` starts it.
 */
function toolOutput<S extends z.ZodRawShape>(shape: S) {
  return z
    .object(shape)
    .partial()
    .extend({
      error: McpToolError.optional().describe("set only when isError is true"),
      full_result: McpFullResult.optional().describe(
        "set when the whole result was over the size limit of one tool result: it is stored in full at content_url, and the large fields are left out here",
      ),
      preview: z.string().optional().describe("with full_result: the start of the answer's text (or of the stored JSON), cut short"),
    });
}

const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
  .describe(
    "One stable key per logical request. Repeating a call with the same key and the same arguments replays its result and charges once. Omit it and one is generated and returned.",
  );

const ModelId = z.string().min(1).max(128).describe("a public model id from list_models (one that lists the operation this tool runs)");
const MaxCost = Microrub.describe(
  "Cap in microrubles: the call is refused (max_cost_exceeded, nothing reserved or charged) when its estimate is above it. Copy estimated_cost_microrub from a quote.",
);

const TextContent = 'a string, or an array of text blocks {type: "text", text}';
const Messages = MessagesRequest.shape.messages.describe(
  `The conversation, oldest first: {role: "user" | "assistant", content} turns, starting with user; content is ${TextContent}.`,
);
const MaxTokens = MessagesRequest.shape.max_tokens.describe(
  "Most tokens the answer may have (1 to 1,000,000); the cost estimate and hold are counted from it.",
);
const System = MessagesRequest.shape.system.describe(`System prompt: ${TextContent}.`);
const Temperature = MessagesRequest.shape.temperature.describe("Sampling temperature, 0 to 2; does not change the price.");

// ---------------------------------------------------------------- read tools

/** The operations a model may offer, as list_models filters them. */
export const McpModelOperation = z.enum(["text", "image_edit", "image_analysis", "ocr", "text_analysis", "image_generation"]);

export const ListModelsInput = z.strictObject({
  operation: McpModelOperation.optional().describe("only models that offer this operation (text for create_message and create_response)"),
  limit: z.int().min(1).max(100).optional().describe("models per page, 1 to 100 (default 20)"),
  cursor: z.string().min(1).max(64).optional().describe("next_cursor of the previous page"),
});
export const ListModelsOutput = toolOutput({
  models: z.array(
    z.looseObject({
      id: z.string(),
      display_name: z.string().optional(),
      operations: z.record(z.string(), z.unknown()).describe("operation -> tariff in microrubles"),
    }),
  ),
  has_more: z.boolean(),
  next_cursor: z.string().nullable().describe("pass it as cursor for the next page; null on the last"),
});

/** The body of `POST /v1/chat/quote`, as the HTTP API takes it (streaming aside, which is never offered). */
export const QuoteTextInput = z.strictObject({
  model: ModelId,
  messages: ChatQuoteRequest.shape.messages.describe(
    `The conversation to price: {role: "system" | "user" | "assistant", content} turns; content is ${TextContent}.`,
  ),
  max_tokens: ChatQuoteRequest.shape.max_tokens.describe("Most tokens the answer may have; the default of the API when omitted."),
  system: System,
  temperature: Temperature,
  max_cost_microrub: MaxCost.optional(),
});
const Quote = z.looseObject({ estimated_cost_microrub: Microrub, expires_at: z.string().optional() });
export const QuoteTextOutput = toolOutput({ quote: Quote });

const FileId = z.string().min(1).max(200).describe("id of one of your verified files (list_files)");
const FileIds = z.array(z.string().min(1).max(200)).min(1).max(100).describe("ids of your verified files, 1 to 100, processed in order");
const Settings = z
  .record(z.string(), z.unknown())
  .describe('model-specific settings, as list_models shows them for the model (e.g. {language: "eng"} for OCR)');
const Prompt = EditPrompt;

/** `file_id` or `file_ids`, exactly one: checked here and stated as `oneOf` for the model. */
function oneSource(body: { file_id?: string | undefined; file_ids?: string[] | undefined }, ctx: z.RefinementCtx): void {
  if ((body.file_id === undefined) === (body.file_ids === undefined)) {
    ctx.addIssue({ code: "custom", path: ["file_id"], message: "give exactly one of file_id or file_ids" });
  }
}
const ONE_SOURCE = { oneOf: [{ required: ["file_id"] }, { required: ["file_ids"] }] };

export const QuoteMediaInput = z.strictObject({
  operation: MediaQuoteRequest.shape.operation.describe("the job to price: image_edit, image_analysis, ocr, text_analysis or image_generation"),
  model: ModelId,
  prompt: Prompt.optional().describe("image_edit and image_generation: the instruction"),
  file_id: FileId.optional().describe("image_analysis and ocr: the one file to process (or file_ids)"),
  file_ids: FileIds.optional().describe("image_analysis and ocr: several files (or file_id)"),
  input: z.string().optional().describe("text_analysis: the text to analyze"),
  settings: Settings.optional(),
  max_cost_microrub: MaxCost.optional(),
});
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

export const GetJobInput = z.strictObject({ job_id: z.string().min(1).max(200).describe("the job's id, as a job tool returned it in job.id") });
export const GetJobOutput = toolOutput(JobFields);

export const ListFilesInput = z.strictObject({
  limit: z.int().min(1).max(100).optional().describe("files per page, 1 to 100"),
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

export const GetFileInput = z.strictObject({ file_id: z.string().min(1).max(200).describe("the file's id (list_files)") });
export const GetFileOutput = toolOutput({ file: FileEntry, content: McpFileLink.optional().describe("present once the file is verified") });

// ---------------------------------------------------------------- paid tools

/** A paid text call that did not finish in time, or whose outcome is not known yet: repeat it with the same key. */
const Pending = z.looseObject({ status: z.string() });
const PaidStatus = z.enum(["completed", "pending"]);

/** The body of `POST /v1/messages` (streaming aside), the call's cap and its idempotency key. */
export const CreateMessageInput = z.strictObject({
  model: ModelId,
  messages: Messages,
  max_tokens: MaxTokens,
  system: System,
  temperature: Temperature,
  max_cost_microrub: MaxCost.optional(),
  idempotency_key: IdempotencyKey.optional(),
});
export const CreateMessageOutput = toolOutput({
  idempotency_key: z.string(),
  status: PaidStatus,
  text: z.string().describe("the answer's text"),
  message: z.looseObject({ id: z.string() }).describe("the /v1/messages answer without its content (that is text): stop_reason, usage and billing"),
  pending: Pending,
});

const ResponsesInputShape = ResponsesRequest.shape;
/** The body of `POST /v1/responses` (streaming aside), the call's cap and its idempotency key. */
export const CreateResponseInput = z.strictObject({
  model: ModelId,
  input: ResponsesInputShape.input.describe(
    'The prompt: a string, or messages {role: "user" | "assistant" | "system" | "developer", content} where content is a string or parts {type: "input_text", text}.',
  ),
  instructions: ResponsesInputShape.instructions.describe("System instructions, placed before the input."),
  max_output_tokens: ResponsesInputShape.max_output_tokens.describe("Most tokens the answer may have; the default of the API when omitted."),
  temperature: Temperature,
  metadata: ResponsesInputShape.metadata.describe("Your own string labels (keys up to 64, values up to 512 characters), stored with the response."),
  max_cost_microrub: MaxCost.optional(),
  idempotency_key: IdempotencyKey.optional(),
});
export const CreateResponseOutput = toolOutput({
  idempotency_key: z.string(),
  status: PaidStatus,
  text: z.string().describe("the answer's text"),
  response: z.looseObject({ id: z.string() }).describe("the /v1/responses answer without its output (that is text): usage and billing"),
  pending: Pending,
});

const JobOptions = {
  model: ModelId,
  max_cost_microrub: MaxCost.optional(),
  settings: Settings.optional(),
  idempotency_key: IdempotencyKey.optional(),
};

/** The job bodies of the HTTP API and the call's idempotency key; `file_id` or `file_ids`, exactly one. */
export const AnalyzeImageInput = z
  .strictObject({
    file_id: FileId.optional().describe("the image to analyze (or file_ids)"),
    file_ids: FileIds.optional().describe("several images to analyze together (or file_id)"),
    ...JobOptions,
  })
  .superRefine(oneSource)
  .meta(ONE_SOURCE);
export const OcrInput = z
  .strictObject({
    file_id: FileId.optional().describe("the image or PDF to read (or file_ids)"),
    file_ids: FileIds.optional().describe("several images or PDFs, read in order (or file_id)"),
    ...JobOptions,
  })
  .superRefine(oneSource)
  .meta(ONE_SOURCE);
export const EditImageInput = z.strictObject({
  prompt: ImageEditJobRequest.shape.prompt.describe("what to change in the image, up to 1000 characters"),
  file_id: FileId.describe("the image to edit"),
  ...JobOptions,
});
export const AnalyzeTextInput = z.strictObject({
  input: TextAnalysisJobRequest.shape.input.describe("the text to analyze, given here directly (not a file)"),
  ...JobOptions,
});

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
