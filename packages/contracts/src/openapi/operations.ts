import type { z } from "zod";
import { AddMemberRequest, CreateKeyRequest, CreateOrganizationRequest, CreateUserRequest, CreditRequest } from "../admin";
import { ModelUpsert } from "../catalog";
import type { ErrorCode } from "../errors";
import { CreateFileRequest, FileDeleted, FileList, FileRecord } from "../files";
import { FilesJobRequest, ImageEditJobRequest, JobList, JobRecord, MediaQuote, MediaQuoteRequest, TextAnalysisJobRequest } from "../media";
import { ChatQuoteRequest, MessagesRequest, ResponsesRequest } from "../text";
import {
  ApiKey,
  Balance,
  ChatQuote,
  JsonRpcRequest,
  KeyUsage,
  LedgerPage,
  MessageResponse,
  ModelList,
  Organization,
  PendingObject,
  PublicModel,
  ResponseObject,
  User,
} from "./response-schemas";

/**
 * Every public operation of the gateway (gateway/src/routes.ts says which service answers it; a test
 * there checks that the two lists agree), with the contract's schemas of its bodies and the error codes
 * it may answer. The OpenAPI document is generated from this table (document.ts).
 */
export type Security = "key" | "key-or-x-api-key" | "admin" | "upload-link" | "none";

export interface Body {
  /** A named schema (components/schemas/<name>). */
  schema: z.ZodType;
  name: string;
}

export interface Answer {
  description: string;
  body?: Body;
  /** Raw bytes (a file's content), not JSON. */
  binary?: boolean;
  headers?: string[];
}

export interface PublicOperation {
  method: "get" | "post" | "put" | "delete";
  /** OpenAPI form: /v1/files/{file_id} */
  path: string;
  summary: string;
  tag: "Text" | "Models" | "Media jobs" | "Files" | "MCP" | "Admin" | "Service";
  security: Security;
  /** The scopes of which the key must hold one (docs/api.md "Keys and scopes"). */
  scopes?: string[];
  idempotent?: boolean;
  request?: Body | { binary: true };
  query?: Record<string, { description: string; schema: object }>;
  answers: Partial<Record<200 | 201 | 202, Answer>>;
  errors: ErrorCode[];
  description?: string;
}

const body = (name: string, schema: z.ZodType): Body => ({ name, schema });

const KEY_ERRORS: ErrorCode[] = ["authentication_required", "invalid_api_key", "insufficient_scope", "rate_limited", "service_unavailable", "internal_error"];
/** A JSON body: malformed, wrong, too large, not UTF-8 JSON, or too slow to arrive (docs/api.md, Request bodies). */
const JSON_ERRORS: ErrorCode[] = ["invalid_json", "invalid_request", "unknown_field", "payload_too_large", "unsupported_media_type", "request_timeout"];
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
const ADMIN_ERRORS: ErrorCode[] = ["authentication_required", "invalid_api_key", "service_unavailable", "internal_error"];

const PENDING: Answer = {
  description: "Pending: not final yet (docs/api.md, docs/pending-requests.md)",
  body: body("Pending", PendingObject),
  headers: ["Retry-After"],
};
const JOB_ACCEPTED: Answer = { description: "The job, queued (a repeat of a finished job answers 200 with it)", body: body("Job", JobRecord) };
const limitQuery = (max: number, fallback: number) => ({
  limit: { description: `1-${max}, default ${fallback}`, schema: { type: "integer", minimum: 1, maximum: max } },
});

export const PUBLIC_OPERATIONS: readonly PublicOperation[] = [
  {
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
  {
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
  {
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
  {
    method: "get",
    path: "/v1/models",
    tag: "Models",
    summary: "The published catalog: models, operations, tariffs",
    security: "key",
    answers: { 200: { description: "Every enabled model", body: body("ModelList", ModelList) } },
    errors: KEY_ERRORS,
  },
  {
    method: "get",
    path: "/v1/models/{model_id}",
    tag: "Models",
    summary: "One published model",
    description: "A model id may contain `/` (vendor/model); it is sent as is.",
    security: "key",
    answers: { 200: { description: "The model", body: body("Model", PublicModel) } },
    errors: [...KEY_ERRORS, "model_not_found"],
  },
  ...(
    [
      ["/v1/images/edits", "Edit an image", "ImageEditJobRequest", ImageEditJobRequest, ["images"]],
      ["/v1/images/analysis", "Analyse images", "ImageAnalysisJobRequest", FilesJobRequest, ["images"]],
      ["/v1/ocr", "Recognise the text of images and PDFs", "OcrJobRequest", FilesJobRequest, ["text"]],
      ["/v1/text/analysis", "Analyse a text", "TextAnalysisJobRequest", TextAnalysisJobRequest, ["text"]],
    ] as const
  ).map(([path, summary, name, schema, scopes]): PublicOperation => ({
    method: "post",
    path,
    tag: "Media jobs",
    summary: `${summary} (an asynchronous job)`,
    security: "key",
    scopes: [...scopes],
    idempotent: true,
    request: body(name, schema),
    answers: { 200: { description: "A repeat of a finished job: the job", body: body("Job", JobRecord) }, 202: JOB_ACCEPTED },
    errors: [...KEY_ERRORS, ...MEDIA_ERRORS],
  })),
  {
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
  {
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
  {
    method: "get",
    path: "/v1/jobs/{job_id}",
    tag: "Media jobs",
    summary: "One job",
    security: "key",
    scopes: ["images", "text"],
    answers: { 200: { description: "The job", body: body("Job", JobRecord) } },
    errors: [...KEY_ERRORS, "not_found", "media_disabled"],
  },
  {
    method: "post",
    path: "/v1/jobs/{job_id}/cancel",
    tag: "Media jobs",
    summary: "Cancel a queued job and release its hold",
    security: "key",
    scopes: ["images", "text"],
    answers: { 200: { description: "The job (a running job finishes)", body: body("Job", JobRecord) } },
    errors: [...KEY_ERRORS, "not_found", "media_disabled", "invalid_json"],
  },
  {
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
  {
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
  {
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
  {
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
  {
    method: "get",
    path: "/v1/files/{file_id}",
    tag: "Files",
    summary: "One file",
    security: "key",
    scopes: ["files:read", "files:write"],
    answers: { 200: { description: "The file", body: body("File", FileRecord) } },
    errors: [...KEY_ERRORS, "file_not_found"],
  },
  {
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
  {
    method: "delete",
    path: "/v1/files/{file_id}",
    tag: "Files",
    summary: "Delete a file",
    security: "key",
    scopes: ["files:write"],
    answers: { 200: { description: "Deleted", body: body("FileDeleted", FileDeleted) } },
    errors: [...KEY_ERRORS, "file_not_found"],
  },
  {
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
  {
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
  ...adminOperations(),
  {
    method: "get",
    path: "/openapi.json",
    tag: "Service",
    summary: "This document",
    security: "none",
    answers: { 200: { description: "OpenAPI 3.1" } },
    errors: [],
  },
  {
    method: "get",
    path: "/healthz",
    tag: "Service",
    summary: "The gateway process is alive",
    security: "none",
    answers: { 200: { description: '`{"status":"ok"}`' } },
    errors: [],
  },
];

/** The account cabinet's API (docs/api.md "Account cabinet"), with the admin token. */
function adminOperations(): PublicOperation[] {
  const op = (
    method: PublicOperation["method"],
    path: string,
    summary: string,
    answers: PublicOperation["answers"],
    request?: Body,
    errors: ErrorCode[] = [],
  ): PublicOperation => ({
    method,
    path: `/admin/v1${path}`,
    tag: "Admin",
    summary,
    security: "admin",
    ...(request ? { request } : {}),
    answers,
    errors: [...ADMIN_ERRORS, ...(request ? JSON_ERRORS : []), ...errors],
  });
  return [
    op("post", "/users", "Create a user", { 201: { description: "The user", body: body("User", User) } }, body("CreateUserRequest", CreateUserRequest), [
      "conflict",
    ]),
    op(
      "post",
      "/organizations",
      "Create an organization",
      { 201: { description: "The organization", body: body("Organization", Organization) } },
      body("CreateOrganizationRequest", CreateOrganizationRequest),
    ),
    op("post", "/organizations/{organization_id}/members", "Add a member", { 201: { description: "Added" } }, body("AddMemberRequest", AddMemberRequest), [
      "not_found",
    ]),
    op(
      "post",
      "/organizations/{organization_id}/credits",
      "Credit an organization (idempotent on `reference`)",
      { 201: { description: "The ledger entry" } },
      body("CreditRequest", CreditRequest),
      ["not_found", "conflict"],
    ),
    op(
      "get",
      "/organizations/{organization_id}/balance",
      "An organization's balance",
      { 200: { description: "Credits - settled charges - active holds", body: body("Balance", Balance) } },
      undefined,
      ["not_found"],
    ),
    op(
      "get",
      "/organizations/{organization_id}/ledger",
      "An organization's ledger, newest first",
      { 200: { description: "A page of entries", body: body("LedgerPage", LedgerPage) } },
      undefined,
      ["not_found", "invalid_request"],
    ),
    op(
      "post",
      "/keys",
      "Create an API key (shown once)",
      { 201: { description: "The key, with `key`", body: body("ApiKey", ApiKey) } },
      body("CreateKeyRequest", CreateKeyRequest),
      ["not_found"],
    ),
    op(
      "post",
      "/keys/{key_id}/revoke",
      "Revoke a key (within 5 s on every gateway)",
      { 200: { description: "The key, revoked", body: body("ApiKey", ApiKey) } },
      undefined,
      ["not_found"],
    ),
    op("get", "/keys/{key_id}/usage", "A key's spending today", { 200: { description: "The day's usage", body: body("KeyUsage", KeyUsage) } }, undefined, [
      "not_found",
    ]),
    op("get", "/models", "Every model of the catalog, with its provider", { 200: { description: "The catalog" } }),
    op(
      "put",
      "/models/{model_id}",
      "Create or replace a model (a change applies within 5 s; a hold keeps its price)",
      { 200: { description: "The model" } },
      body("ModelUpsert", ModelUpsert),
      ["unsupported_parameter"],
    ),
    op("get", "/holds", "Holds, by status (`?status=active`)", { 200: { description: "A page of holds" } }, undefined, ["invalid_request"]),
    op(
      "post",
      "/holds/{hold_id}/release",
      "Release a hold nobody resolved (an operator's decision)",
      { 200: { description: "The hold, released" } },
      undefined,
      ["not_found", "hold_already_resolved"],
    ),
  ];
}
