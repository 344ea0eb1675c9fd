import type { z } from "zod";
import type { ErrorCode } from "../errors";
import { CreateFileRequest, FileDeleted, FileList, FileRecord } from "../files";
import { FilesJobRequest, ImageEditJobRequest, JobList, JobRecord, MediaQuote, MediaQuoteRequest, TextAnalysisJobRequest } from "../media";
import { RequestLogList, RequestLogQuery } from "../request-log";
import { ChatQuoteRequest, MessagesRequest, ResponsesRequest } from "../text";
import { body, JSON_ERRORS, KEY_ERRORS, type ApiOperation, type Answer, type OperationGroup } from "./operation";
import { ChatQuote, JsonRpcRequest, MessageResponse, ModelList, PendingObject, PublicModel, ResponseObject } from "./response-schemas";

/*
 * The public operations of the gateway (`/v1`, `/mcp`), in groups by what serves them: the gateway
 * forwards each to its service (gateway/src/routes.ts names one for every operation), billing-ledger
 * mounts the catalog's from ModelOperations.
 */

const PAID_ERRORS: ErrorCode[] = [
  ...JSON_ERRORS,
  "unsupported_parameter",
  "idempotency_key_required",
  "idempotency_key_mismatch",
  "model_not_found",
  "cost_unknown",
  "max_cost_exceeded",
  "insufficient_balance",
  "daily_budget_exceeded",
  "model_unavailable",
];
const MEDIA_ERRORS: ErrorCode[] = [...PAID_ERRORS, "media_disabled", "file_not_found", "file_not_verified"];

const PENDING: Answer = {
  description: "Pending: not final yet (docs/api.md, docs/pending-requests.md)",
  body: body("Pending", PendingObject),
  headers: ["Retry-After"],
};
const JOB_ACCEPTED: Answer = { description: "The job, queued (a repeat of a finished job answers 200 with it)", body: body("Job", JobRecord) };
const limitQuery = (max: number, fallback: number) => ({
  limit: { description: `1-${max}, default ${fallback}`, schema: { type: "integer", minimum: 1, maximum: max } },
});

function mediaJob(path: string, summary: string, name: string, schema: z.ZodType, scopes: string[]): ApiOperation {
  return {
    method: "post",
    path,
    tag: "Media jobs",
    summary: `${summary} (an asynchronous job)`,
    security: "key",
    scopes,
    idempotent: true,
    request: body(name, schema),
    answers: { 200: { description: "A repeat of a finished job: the job", body: body("Job", JobRecord) }, 202: JOB_ACCEPTED },
    errors: [...KEY_ERRORS, ...MEDIA_ERRORS],
  };
}

/** Text: forwarded to the text service. */
export const TextOperations = {
  messages: {
    method: "post",
    path: "/v1/messages",
    tag: "Text",
    summary: "Create a message (Anthropic Messages API)",
    security: "key-or-x-api-key",
    scopes: ["text"],
    idempotent: true,
    request: body("MessagesRequest", MessagesRequest),
    answers: { 200: { description: "The message, with its billing", body: body("Message", MessageResponse) }, 202: PENDING },
    errors: [...KEY_ERRORS, ...PAID_ERRORS, "upstream_error"],
  },
  responses: {
    method: "post",
    path: "/v1/responses",
    tag: "Text",
    summary: "Create a response (OpenAI Responses API)",
    security: "key",
    scopes: ["text"],
    idempotent: true,
    request: body("ResponsesRequest", ResponsesRequest),
    answers: { 200: { description: "The response, with its billing", body: body("Response", ResponseObject) }, 202: PENDING },
    errors: [...KEY_ERRORS, ...PAID_ERRORS, "upstream_error"],
  },
  chatQuote: {
    method: "post",
    path: "/v1/chat/quote",
    tag: "Text",
    summary: "Quote a text request: no hold, no model call",
    security: "key-or-x-api-key",
    scopes: ["text"],
    request: body("ChatQuoteRequest", ChatQuoteRequest),
    answers: { 200: { description: "The estimate, valid 30 s", body: body("ChatQuote", ChatQuote) } },
    errors: [...KEY_ERRORS, ...JSON_ERRORS, "unsupported_parameter", "model_not_found", "cost_unknown", "max_cost_exceeded", "model_unavailable"],
  },
} satisfies OperationGroup;

/** The published catalog: billing-ledger serves it. */
export const ModelOperations = {
  models: {
    method: "get",
    path: "/v1/models",
    tag: "Models",
    summary: "The published catalog: models, operations, tariffs",
    security: "key",
    answers: { 200: { description: "Every enabled model", body: body("ModelList", ModelList) } },
    errors: KEY_ERRORS,
  },
  model: {
    method: "get",
    path: "/v1/models/{model_id}",
    rest: "model_id",
    tag: "Models",
    summary: "One published model",
    description: "A model id may contain `/` (vendor/model); it is sent as is.",
    security: "key",
    answers: { 200: { description: "The model", body: body("Model", PublicModel) } },
    errors: [...KEY_ERRORS, "model_not_found"],
  },
} satisfies OperationGroup;

/** The calling key's request log: billing-ledger serves it (docs/api.md "Request log"). */
export const UsageOperations = {
  usageRequests: {
    method: "get",
    path: "/v1/usage/requests",
    tag: "Usage",
    summary: "The calling key's paid requests, newest first",
    description:
      "Any valid key; only its own entries. An entry appears once the request's charge is final. `cursor` is the previous page's `next_cursor`; `from` (inclusive) and `to` (exclusive) bound `created_at`.",
    security: "key",
    query: RequestLogQuery,
    answers: { 200: { description: "A page of entries", body: body("RequestLogList", RequestLogList) } },
    errors: [...KEY_ERRORS, "invalid_request", "unknown_field"],
  },
} satisfies OperationGroup;

/** Media jobs: forwarded to media-jobs. */
export const MediaJobOperations = {
  imageEdits: mediaJob("/v1/images/edits", "Edit an image", "ImageEditJobRequest", ImageEditJobRequest, ["images"]),
  imageAnalysis: mediaJob("/v1/images/analysis", "Analyse images", "ImageAnalysisJobRequest", FilesJobRequest, ["images"]),
  ocr: mediaJob("/v1/ocr", "Recognise the text of images and PDFs", "OcrJobRequest", FilesJobRequest, ["text"]),
  textAnalysis: mediaJob("/v1/text/analysis", "Analyse a text", "TextAnalysisJobRequest", TextAnalysisJobRequest, ["text"]),
  quotes: {
    method: "post",
    path: "/v1/quotes",
    tag: "Media jobs",
    summary: "Quote a media operation",
    description: "Needs the right of the quoted operation (images for image_*, text for ocr and text_analysis).",
    security: "key",
    scopes: ["images", "text"],
    request: body("MediaQuoteRequest", MediaQuoteRequest),
    answers: { 200: { description: "The estimate, valid 30 s", body: body("MediaQuote", MediaQuote) } },
    errors: [
      ...KEY_ERRORS,
      ...JSON_ERRORS,
      "unsupported_parameter",
      "model_not_found",
      "cost_unknown",
      "max_cost_exceeded",
      "media_disabled",
      "file_not_found",
      "file_not_verified",
    ],
  },
  jobs: {
    method: "get",
    path: "/v1/jobs",
    tag: "Media jobs",
    summary: "The caller's jobs, newest first",
    security: "key",
    scopes: ["images", "text"],
    query: { ...limitQuery(100, 20), after: { description: "The last id of the previous page", schema: { type: "string" } } },
    answers: { 200: { description: "A page of jobs", body: body("JobList", JobList) } },
    errors: [...KEY_ERRORS, "invalid_request", "media_disabled"],
  },
  job: {
    method: "get",
    path: "/v1/jobs/{job_id}",
    tag: "Media jobs",
    summary: "One job",
    security: "key",
    scopes: ["images", "text"],
    answers: { 200: { description: "The job", body: body("Job", JobRecord) } },
    errors: [...KEY_ERRORS, "not_found", "media_disabled"],
  },
  cancelJob: {
    method: "post",
    path: "/v1/jobs/{job_id}/cancel",
    tag: "Media jobs",
    summary: "Cancel a queued job and release its hold",
    security: "key",
    scopes: ["images", "text"],
    answers: { 200: { description: "The job (a running job finishes)", body: body("Job", JobRecord) } },
    errors: [...KEY_ERRORS, "not_found", "media_disabled", "invalid_json"],
  },
} satisfies OperationGroup;

/** Files and their upload links: forwarded to files. */
export const FileOperations = {
  createFile: {
    method: "post",
    path: "/v1/files",
    tag: "Files",
    summary: "Declare a file and get its signed upload link",
    security: "key",
    scopes: ["files:write"],
    request: body("CreateFileRequest", CreateFileRequest),
    answers: {
      201: { description: "The file, awaiting its upload, with `upload`: PUT the bytes there with exactly its headers", body: body("File", FileRecord) },
    },
    errors: [...KEY_ERRORS, ...JSON_ERRORS, "unsupported_media_type", "file_quota_exceeded"],
  },
  upload: {
    method: "put",
    path: "/v1/uploads/{token}",
    tag: "Files",
    summary: "Upload a file's bytes (the signed link of POST /v1/files)",
    description: "No API key: the link is the credential, valid 300 s. Send exactly the headers of `upload.headers`.",
    security: "upload-link",
    request: { binary: true },
    answers: { 200: { description: "The file, uploaded", body: body("File", FileRecord) } },
    errors: [
      "invalid_upload_link",
      "upload_link_expired",
      "invalid_upload_headers",
      "payload_too_large",
      "request_timeout",
      "upload_already_completed",
      "service_unavailable",
      "internal_error",
    ],
  },
  completeFile: {
    method: "post",
    path: "/v1/files/{file_id}/complete",
    tag: "Files",
    summary: "Verify an uploaded file (size, SHA-256, type, antivirus)",
    security: "key",
    scopes: ["files:write"],
    answers: {
      200: { description: "The final record: verified, or rejected with `rejection.code`", body: body("File", FileRecord) },
      202: { description: "Still verifying (status `verifying`): read it again later", body: body("File", FileRecord) },
    },
    errors: [...KEY_ERRORS, "file_not_found", "invalid_json"],
  },
  files: {
    method: "get",
    path: "/v1/files",
    tag: "Files",
    summary: "The caller's files",
    security: "key",
    scopes: ["files:read", "files:write"],
    query: { ...limitQuery(100, 20), cursor: { description: "next_cursor of the previous page", schema: { type: "string" } } },
    answers: { 200: { description: "A page of files", body: body("FileList", FileList) } },
    errors: [...KEY_ERRORS, "invalid_request"],
  },
  file: {
    method: "get",
    path: "/v1/files/{file_id}",
    tag: "Files",
    summary: "One file",
    security: "key",
    scopes: ["files:read", "files:write"],
    answers: { 200: { description: "The file", body: body("File", FileRecord) } },
    errors: [...KEY_ERRORS, "file_not_found"],
  },
  fileContent: {
    method: "get",
    path: "/v1/files/{file_id}/content",
    tag: "Files",
    summary: "Download a verified file or a job result",
    description: "A job's result is also readable by any key of its owner holding the job's own scope (images or text).",
    security: "key",
    scopes: ["files:read", "files:write", "images", "text"],
    answers: { 200: { description: "The bytes, with the file's Content-Type", binary: true } },
    errors: [...KEY_ERRORS, "file_not_found", "file_not_verified"],
  },
  deleteFile: {
    method: "delete",
    path: "/v1/files/{file_id}",
    tag: "Files",
    summary: "Delete a file",
    security: "key",
    scopes: ["files:write"],
    answers: { 200: { description: "Deleted", body: body("FileDeleted", FileDeleted) } },
    errors: [...KEY_ERRORS, "file_not_found"],
  },
} satisfies OperationGroup;

/** MCP: forwarded to the mcp service. */
export const McpOperations = {
  mcpResult: {
    method: "get",
    path: "/v1/mcp/results/{result_id}",
    tag: "MCP",
    summary: "Download a tool result that was too large for one MCP response",
    description:
      "The whole structured result of a tool call whose response would have exceeded 512 KiB, as JSON; the tool's result links it as full_result.content_url. Only the key that called the tool may read it; kept 7 days. docs/mcp.md.",
    security: "key",
    scopes: ["mcp:read", "mcp:invoke"],
    answers: { 200: { description: "The tool's structured result (application/json)" } },
    errors: [...KEY_ERRORS, "not_found"],
  },
  mcp: {
    method: "post",
    path: "/mcp",
    tag: "MCP",
    summary: "The MCP server (streamable HTTP, stateless): JSON-RPC tools over this API",
    description:
      "Accept must list application/json and text/event-stream (else 406); GET and DELETE answer 405. Tools: docs/mcp.md. Paid tools take an optional `idempotency_key`.",
    security: "key",
    scopes: ["mcp:read", "mcp:invoke"],
    request: body("JsonRpcRequest", JsonRpcRequest),
    answers: { 200: { description: "The JSON-RPC answer (as JSON or as one server-sent event)" } },
    errors: [
      ...KEY_ERRORS,
      "invalid_json",
      "payload_too_large",
      "unsupported_media_type",
      "request_timeout",
      "not_acceptable",
      "method_not_allowed",
      "origin_not_allowed",
    ],
  },
} satisfies OperationGroup;

/** What the gateway answers itself. */
export const ServiceOperations = {
  openapi: {
    method: "get",
    path: "/openapi.json",
    tag: "Service",
    summary: "This document",
    security: "none",
    answers: { 200: { description: "OpenAPI 3.1" } },
    errors: [],
  },
  healthz: {
    method: "get",
    path: "/healthz",
    tag: "Service",
    summary: "The gateway process is alive",
    security: "none",
    answers: { 200: { description: '`{"status":"ok"}`' } },
    errors: [],
  },
} satisfies OperationGroup;

/** Every public operation the gateway forwards to a service (routes.ts names the service of each). */
export const PublicOperations = { ...TextOperations, ...ModelOperations, ...UsageOperations, ...MediaJobOperations, ...FileOperations, ...McpOperations };
