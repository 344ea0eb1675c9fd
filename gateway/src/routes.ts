import type { Scope, ServiceName as AllServices } from "@meter/contracts";

/** The services behind the gateway (packages/contracts/src/services.ts, less the gateway itself). */
export type ServiceName = Exclude<AllServices, "gateway">;

export type Auth =
  /** An API key holding at least one of `anyOf` (empty: any valid key). */
  | { kind: "key"; anyOf: readonly Scope[]; xApiKey?: boolean }
  | { kind: "admin" }
  /** The URL is the credential (signed upload links); the service checks it. */
  | { kind: "link" };

export type BodyKind = "json" | "text-json" | "mcp-json" | "stream" | "none";

export interface RouteSpec {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Express-style pattern, e.g. /v1/files/:id */
  path: string;
  service: ServiceName;
  auth: Auth;
  body: BodyKind;
  /** Paid and idempotent: a connection lost after sending means the outcome is unknown, not failed. */
  paid?: boolean;
  /** Behind the MEDIA_ENABLED switch (off by default: 503 `media_disabled`). */
  media?: boolean;
}

const key = (anyOf: readonly Scope[], xApiKey = false): Auth => ({ kind: "key", anyOf, xApiKey });

/** The OpenAPI document of these routes (packages/contracts/src/openapi), answered by the gateway itself, without a key. */
export const OPENAPI_PATH = "/openapi.json";

/**
 * Every public path, the service behind it and the right it needs (docs/api.md "Keys and scopes"). For
 * jobs and quotes the exact right depends on the operation, which the gateway reads from the body
 * (quotes) or the service checks against the job (reads); here the key must hold at least one of the
 * rights involved.
 */
export const ROUTES: readonly RouteSpec[] = [
  { method: "POST", path: "/v1/messages", service: "text", auth: key(["text"], true), body: "text-json", paid: true },
  { method: "POST", path: "/v1/responses", service: "text", auth: key(["text"]), body: "text-json", paid: true },
  { method: "POST", path: "/v1/chat/quote", service: "text", auth: key(["text"], true), body: "text-json" },
  { method: "GET", path: "/v1/models", service: "billing-ledger", auth: key([]), body: "none" },
  { method: "GET", path: "/v1/models/*id", service: "billing-ledger", auth: key([]), body: "none" },

  { method: "POST", path: "/v1/images/edits", service: "media-jobs", media: true, auth: key(["images"]), body: "json", paid: true },
  { method: "POST", path: "/v1/images/analysis", service: "media-jobs", media: true, auth: key(["images"]), body: "json", paid: true },
  { method: "POST", path: "/v1/ocr", service: "media-jobs", media: true, auth: key(["text"]), body: "json", paid: true },
  { method: "POST", path: "/v1/text/analysis", service: "media-jobs", media: true, auth: key(["text"]), body: "json", paid: true },
  { method: "POST", path: "/v1/quotes", service: "media-jobs", media: true, auth: key(["images", "text"]), body: "json" },
  { method: "GET", path: "/v1/jobs", service: "media-jobs", media: true, auth: key(["images", "text"]), body: "none" },
  { method: "GET", path: "/v1/jobs/:id", service: "media-jobs", media: true, auth: key(["images", "text"]), body: "none" },
  { method: "POST", path: "/v1/jobs/:id/cancel", service: "media-jobs", media: true, auth: key(["images", "text"]), body: "json" },

  { method: "POST", path: "/v1/files", service: "files", auth: key(["files:write"]), body: "json" },
  { method: "GET", path: "/v1/files", service: "files", auth: key(["files:read", "files:write"]), body: "none" },
  { method: "GET", path: "/v1/files/:id", service: "files", auth: key(["files:read", "files:write"]), body: "none" },
  // A job's result is also readable with the job's own scope; the files service checks which file it is.
  { method: "GET", path: "/v1/files/:id/content", service: "files", auth: key(["files:read", "files:write", "images", "text"]), body: "none" },
  { method: "POST", path: "/v1/files/:id/complete", service: "files", auth: key(["files:write"]), body: "json" },
  { method: "DELETE", path: "/v1/files/:id", service: "files", auth: key(["files:write"]), body: "none" },
  { method: "PUT", path: "/v1/uploads/:token", service: "files", auth: { kind: "link" }, body: "stream" },

  { method: "GET", path: "/v1/mcp/results/:id", service: "mcp", auth: key(["mcp:read", "mcp:invoke"]), body: "none" },
  { method: "POST", path: "/mcp", service: "mcp", auth: key(["mcp:read", "mcp:invoke"]), body: "mcp-json" },

  { method: "GET", path: "/admin/v1/*rest", service: "billing-ledger", auth: { kind: "admin" }, body: "none" },
  { method: "POST", path: "/admin/v1/*rest", service: "billing-ledger", auth: { kind: "admin" }, body: "json" },
  { method: "PUT", path: "/admin/v1/*rest", service: "billing-ledger", auth: { kind: "admin" }, body: "json" },
];

/** Whether an Express-style pattern (`/v1/files/:id`, `/admin/v1/*rest`) matches a request path. */
export function routeMatches(pattern: string, path: string): boolean {
  const re = new RegExp(
    "^" +
      pattern
        .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
        .replace(/\/\*[a-z]+$/i, "/.+")
        .replace(/:[a-z]+/gi, "[^/]+") +
      "/?$",
  );
  return re.test(path);
}

/** The methods some route takes on this path (a 405's Allow header); empty when no route has it (404). */
export function methodsAllowedOn(path: string): string[] {
  return [...new Set(ROUTES.filter((r) => routeMatches(r.path, path)).map((r) => r.method))];
}
