import type { z } from "zod";
import type { ErrorCode } from "../errors";

/**
 * One HTTP operation as clients see it: where it is, what it takes and answers, who may call it. The
 * routers mount their routes from these (service-kit's operationRouter) and the OpenAPI document is
 * generated from the same objects (document.ts), so a route and its documentation cannot drift apart.
 */
export type Security = "key" | "key-or-x-api-key" | "admin" | "upload-link" | "cabinet-session" | "none";

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
  /** Text of another type than JSON (text/csv, text/html). */
  text?: string;
  headers?: string[];
}

export type OperationTag = "Text" | "Models" | "Usage" | "Media jobs" | "Files" | "MCP" | "Admin" | "Cabinet" | "Service";

export interface ApiOperation {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** The public path, OpenAPI form: /v1/files/{file_id} */
  path: string;
  /** A path parameter that takes the rest of the path, slashes included (a model id: vendor/model). */
  rest?: string;
  summary: string;
  tag: OperationTag;
  security: Security;
  /** The scopes of which the key must hold one (docs/api.md "Keys and scopes"). */
  scopes?: string[];
  idempotent?: boolean;
  request?: Body | { binary: true };
  /** The query string: the handler parses it with this very schema. */
  query?: z.ZodObject | Record<string, { description: string; schema: object }>;
  answers: Partial<Record<200 | 201 | 202, Answer>>;
  errors: ErrorCode[];
  description?: string;
}

/** The operations one router serves, by name: its handlers are given under the same names. */
export type OperationGroup = Readonly<Record<string, ApiOperation>>;

export const body = (name: string, schema: z.ZodType): Body => ({ name, schema });

/**
 * The Express pattern of an operation, relative to where its router is mounted: `/admin/v1` +
 * `/organizations/{organization_id}` -> `/organizations/:organization_id` (`*model_id` for a rest).
 */
export function routePathOf(op: ApiOperation, publicPrefix = ""): string {
  if (!op.path.startsWith(publicPrefix)) throw new Error(`${op.method} ${op.path} is not under ${publicPrefix}`);
  const relative = op.path.slice(publicPrefix.length).replace(/\{(\w+)\}/g, (_m, name: string) => (name === op.rest ? `*${name}` : `:${name}`));
  return relative === "" ? "/" : relative;
}

export const KEY_ERRORS: ErrorCode[] = [
  "authentication_required",
  "invalid_api_key",
  "insufficient_scope",
  "rate_limited",
  "service_unavailable",
  "internal_error",
];
/** A JSON body: malformed, wrong, too large, not UTF-8 JSON, or too slow to arrive (docs/api.md, Request bodies). */
export const JSON_ERRORS: ErrorCode[] = ["invalid_json", "invalid_request", "unknown_field", "payload_too_large", "unsupported_media_type", "request_timeout"];
