import { z } from "zod";
import { ErrorCatalog, type ErrorCode } from "../errors";
import {
  AdminAccountOperations,
  AdminCatalogOperations,
  AdminHoldOperations,
  AdminInvitationOperations,
  AdminKeyOperations,
  AdminWebhookOperations,
  AdminRequestLogOperations,
  AdminTextOperations,
  AdminHealthOperations,
} from "./admin-operations";
import {
  CabinetCatalogOperations,
  CabinetFileOperations,
  CabinetJobOperations,
  CabinetKeyOperations,
  CabinetMoneyOperations,
  CabinetPageOperations,
  CabinetRequestLogOperations,
  CabinetSessionOperations,
  CabinetSignInOperations,
  CabinetWebhookOperations,
} from "./cabinet-operations";
import type { Answer, ApiOperation, Body, OperationGroup } from "./operation";
import { FileOperations, McpOperations, MediaJobOperations, ModelOperations, ServiceOperations, TextOperations, UsageOperations } from "./operations";
import { ErrorBody, ErrorCodeSchema } from "./response-schemas";

/**
 * Every group of operations the routers mount (gateway, billing-ledger): the document lists exactly
 * these, and the route walks in the gateway's and billing-ledger's tests fail on a route outside them.
 */
export const OPERATION_GROUPS: readonly OperationGroup[] = [
  TextOperations,
  ModelOperations,
  UsageOperations,
  MediaJobOperations,
  FileOperations,
  McpOperations,
  AdminAccountOperations,
  AdminRequestLogOperations,
  AdminKeyOperations,
  AdminCatalogOperations,
  AdminHoldOperations,
  AdminInvitationOperations,
  AdminWebhookOperations,
  AdminTextOperations,
  AdminHealthOperations,
  CabinetSignInOperations,
  CabinetSessionOperations,
  CabinetMoneyOperations,
  CabinetRequestLogOperations,
  CabinetKeyOperations,
  CabinetWebhookOperations,
  CabinetCatalogOperations,
  CabinetFileOperations,
  CabinetJobOperations,
  CabinetPageOperations,
  ServiceOperations,
];

/**
 * The OpenAPI 3.1 document of the public API, generated from the operations the routers mount and
 * their zod schemas (z.toJSONSchema, whose JSON Schema 2020-12 is OpenAPI 3.1's own dialect). Served by
 * the gateway at GET /openapi.json; validated against the OpenAPI 3.1 schema in the gateway's tests.
 */
export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, Record<string, unknown>>> };

/** Bodies as clients send them: input types (defaults optional), shapes zod cannot say as JSON Schema left open. */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}

const SECURITY: Record<ApiOperation["security"], Record<string, string[]>[]> = {
  key: [{ apiKey: [] }],
  "key-or-x-api-key": [{ apiKey: [] }, { xApiKey: [] }],
  admin: [{ adminToken: [] }],
  "upload-link": [],
  "cabinet-session": [{ cabinetSession: [] }],
  none: [],
};

const TAG_NOTES: Record<string, string> = {
  Admin:
    "The operator's API (docs/api.md, Account cabinet). The web cabinet's operator session reaches each of these at /cabinet/api/admin/... in place of /admin/v1/...",
  Cabinet: "The web cabinet: its pages and the API they call with the session cookie (docs/api.md, The web cabinet)",
  Usage: "The calling key's request log: every paid request, kept 90 days (docs/api.md, Request log)",
};

const STATUS_HEADERS: Record<number, string[]> = { 202: ["Retry-After"], 429: ["Retry-After"], 503: ["Retry-After"] };

export function buildOpenApiDocument(): OpenApiDocument {
  const schemas: Record<string, unknown> = { ErrorCode: jsonSchema(ErrorCodeSchema), Error: jsonSchema(ErrorBody) };
  const ref = (b: Body) => {
    schemas[b.name] ??= jsonSchema(b.schema);
    return { $ref: `#/components/schemas/${b.name}` };
  };
  const headersOf = (names: string[]) => Object.fromEntries(["x-request-id", ...names].map((h) => [h, { $ref: `#/components/headers/${h}` }]));
  const answer = (a: Answer, status: number) => ({
    description: a.description,
    headers: headersOf([...(a.headers ?? []), ...(STATUS_HEADERS[status] ?? [])].filter((h, i, all) => all.indexOf(h) === i)),
    ...(a.text ? { content: { [a.text]: { schema: { type: "string" } } } } : {}),
    ...(a.binary ? { content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } } : {}),
    ...(a.body ? { content: { "application/json": { schema: ref(a.body) } } } : {}),
  });
  const errorAnswers = (codes: ErrorCode[]) => {
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of new Set(codes)) byStatus.set(ErrorCatalog[code], [...(byStatus.get(ErrorCatalog[code]) ?? []), code]);
    return Object.fromEntries(
      [...byStatus.entries()]
        .sort(([a], [b]) => a - b)
        .map(([status, list]) => [
          String(status),
          {
            description: list.map((c) => `\`${c}\``).join(", "),
            headers: headersOf(STATUS_HEADERS[status] ?? []),
            content: {
              "application/json": {
                schema: { allOf: [{ $ref: "#/components/schemas/Error" }, { properties: { error: { properties: { code: { enum: list } } } } }] },
              },
            },
          },
        ]),
    );
  };

  const paths: OpenApiDocument["paths"] = {};
  for (const op of OPERATION_GROUPS.flatMap((g) => Object.values(g))) {
    if (paths[op.path]?.[op.method]) throw new Error(`${op.method} ${op.path} is registered twice`);
    const pathParams = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1]!,
      in: "path",
      required: true,
      ...(m[1] === op.rest ? { description: "The rest of the path: it may contain `/`" } : {}),
      schema: { type: "string" },
    }));
    const query = queryParameters(op.query);
    const idempotency = op.idempotent ? [{ $ref: "#/components/parameters/IdempotencyKey" }] : [];
    const request = op.request
      ? "binary" in op.request
        ? { required: true, content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } }
        : { required: true, content: { "application/json": { schema: ref(op.request) } } }
      : undefined;
    const responses = {
      ...Object.fromEntries(Object.entries(op.answers).map(([status, a]) => [status, answer(a, Number(status))])),
      ...errorAnswers(op.errors),
    };
    (paths[op.path] ??= {})[op.method] = {
      operationId: `${op.method}${op.path.replace(/\{(\w+)\}/g, "by_$1").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
      summary: op.summary,
      ...(op.description || op.scopes
        ? {
            description: [op.description, op.scopes ? `Scopes: the key needs ${op.scopes.map((s) => `\`${s}\``).join(" or ")}.` : undefined]
              .filter(Boolean)
              .join("\n\n"),
          }
        : {}),
      tags: [op.tag],
      security: SECURITY[op.security],
      ...(pathParams.length + query.length + idempotency.length > 0 ? { parameters: [...pathParams, ...query, ...idempotency] } : {}),
      ...(request ? { requestBody: request } : {}),
      responses,
      ...(op.scopes ? { "x-scopes": op.scopes } : {}),
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Meter API",
      version: "v1",
      description:
        "A metered AI API: text generation (Anthropic Messages and OpenAI Responses shapes), media jobs, private files and MCP, " +
        "charged in integer microrubles. Idempotency, pending requests, uploads and jobs: docs/idempotency.md, docs/pending-requests.md, docs/uploads.md, docs/jobs.md.",
    },
    servers: [{ url: "/" }],
    tags: ["Text", "Models", "Usage", "Media jobs", "Files", "MCP", "Admin", "Cabinet", "Service"].map((name) => ({
      name,
      ...(TAG_NOTES[name] ? { description: TAG_NOTES[name] } : {}),
    })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: `Authorization: Bearer <key>`" },
        xApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The same key, as Anthropic clients send it (/v1/messages, /v1/chat/quote)" },
        adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN, for /admin/v1" },
        cabinetSession: {
          type: "apiKey",
          in: "cookie",
          name: "meter_session",
          description: "The web cabinet's session (/cabinet/api/sign-in); a state-changing call also sends the meter_csrf cookie's value as X-CSRF-Token",
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: true,
          description:
            "Scope: (API key, method, path, key). Same key and body: the stored answer (Idempotent-Replayed: true) or, while running, 202. Another body: 422 idempotency_key_mismatch. Kept at least 24 h.",
          schema: { type: "string", minLength: 1, maxLength: 255 },
        },
      },
      headers: {
        "x-request-id": { description: "The request's id, also in every error body", schema: { type: "string" } },
        "Retry-After": {
          description: "Seconds to wait before trying again (the same Idempotency-Key for a pending paid request)",
          schema: { type: "integer" },
        },
      },
    },
    "x-error-catalog": { ...ErrorCatalog },
  };
}

/** A query schema the handler parses (a zod object) or a hand-written list, as parameters. */
function queryParameters(query: ApiOperation["query"]): Record<string, unknown>[] {
  if (!query) return [];
  if (query instanceof z.ZodObject) {
    return Object.entries(query.shape as Record<string, z.ZodType>).map(([name, schema]) => {
      const { description, ...rest } = jsonSchema(schema);
      return { name, in: "query", required: !schema.safeParse(undefined).success, ...(description ? { description } : {}), schema: rest };
    });
  }
  return Object.entries(query).map(([name, q]) => ({ name, in: "query", required: false, description: q.description, schema: q.schema }));
}
