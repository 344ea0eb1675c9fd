import {
  ADMIN_PREFIX,
  AdminOperations,
  AdminTextOperations,
  PublicOperations,
  routePathOf,
  ServiceOperations,
  type ApiOperation,
  type Scope,
  type ServiceName as AllServices,
} from "@meter/contracts";

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
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Express-style pattern, e.g. /v1/files/:file_id (the operation's path, routePathOf) */
  path: string;
  service: ServiceName;
  auth: Auth;
  body: BodyKind;
  /** Paid and idempotent: a connection lost after sending means the outcome is unknown, not failed. */
  paid?: boolean;
  /** Behind the MEDIA_ENABLED switch (off by default: 503 `media_disabled`). */
  media?: boolean;
}

/** How the gateway forwards a public operation; the method, path and scopes are the operation's own. */
type Forwarding = Pick<RouteSpec, "service" | "body" | "paid" | "media">;

/** The OpenAPI document of these routes (packages/contracts/src/openapi), answered by the gateway itself, without a key. */
export const OPENAPI_PATH = ServiceOperations.openapi.path;

/**
 * The service behind every public operation, in the order the routes are mounted (and a 405 lists
 * methods). The type asks for every operation of the contracts and no other, so a public route
 * cannot exist without its OpenAPI entry nor an entry without its route.
 */
const FORWARDING: { readonly [K in keyof typeof PublicOperations]: Forwarding } = {
  messages: { service: "text", body: "text-json", paid: true },
  responses: { service: "text", body: "text-json", paid: true },
  chatQuote: { service: "text", body: "text-json" },
  models: { service: "billing-ledger", body: "none" },
  model: { service: "billing-ledger", body: "none" },
  usageRequests: { service: "billing-ledger", body: "none" },

  imageEdits: { service: "media-jobs", media: true, body: "json", paid: true },
  imageAnalysis: { service: "media-jobs", media: true, body: "json", paid: true },
  ocr: { service: "media-jobs", media: true, body: "json", paid: true },
  textAnalysis: { service: "media-jobs", media: true, body: "json", paid: true },
  quotes: { service: "media-jobs", media: true, body: "json" },
  jobs: { service: "media-jobs", media: true, body: "none" },
  job: { service: "media-jobs", media: true, body: "none" },
  cancelJob: { service: "media-jobs", media: true, body: "json" },

  createFile: { service: "files", body: "json" },
  files: { service: "files", body: "none" },
  file: { service: "files", body: "none" },
  fileContent: { service: "files", body: "none" },
  completeFile: { service: "files", body: "json" },
  deleteFile: { service: "files", body: "none" },
  upload: { service: "files", body: "stream" },

  mcpResult: { service: "mcp", body: "none" },
  mcp: { service: "mcp", body: "mcp-json" },
};

/**
 * The scopes of an operation (docs/api.md "Keys and scopes"). For jobs and quotes the exact right
 * depends on the operation, which the gateway reads from the body (quotes) or the service checks
 * against the job (reads); here the key must hold at least one of the rights involved.
 */
function authOf(op: ApiOperation): Auth {
  switch (op.security) {
    case "key":
    case "key-or-x-api-key":
      return { kind: "key", anyOf: (op.scopes ?? []) as Scope[], xApiKey: op.security === "key-or-x-api-key" };
    case "admin":
      return { kind: "admin" };
    case "upload-link":
      return { kind: "link" };
    default:
      throw new Error(`${op.method} ${op.path}: the gateway forwards no ${op.security} operation`);
  }
}

const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
const ADMIN_METHODS = HTTP_METHODS.filter((m) => Object.values(AdminOperations).some((op) => op.method === m.toLowerCase()));

/**
 * Every public path, the service behind it and the right it needs; then the operator's view of text's
 * routing, which the text service serves; then the rest of the admin API, which billing-ledger mounts
 * operation by operation (its own routes come from the same contracts) and the gateway forwards whole,
 * with the admin token, for each method the admin operations use.
 */
export const ROUTES: readonly RouteSpec[] = [
  ...(Object.entries(FORWARDING) as [keyof typeof PublicOperations, Forwarding][]).map(([name, forwarding]): RouteSpec => {
    const op: ApiOperation = PublicOperations[name];
    return { method: op.method.toUpperCase() as RouteSpec["method"], path: routePathOf(op), auth: authOf(op), ...forwarding };
  }),
  ...Object.values(AdminTextOperations).map((op: ApiOperation): RouteSpec => ({
    method: op.method.toUpperCase() as RouteSpec["method"],
    path: routePathOf(op),
    service: "text",
    auth: authOf(op),
    body: "none",
  })),
  ...ADMIN_METHODS.map((method): RouteSpec => ({
    method,
    path: `${ADMIN_PREFIX}/*rest`,
    service: "billing-ledger",
    auth: { kind: "admin" },
    body: method === "GET" || method === "DELETE" ? "none" : "json",
  })),
];

/** Whether an Express-style pattern (`/v1/files/:file_id`, `/admin/v1/*rest`) matches a request path. */
export function routeMatches(pattern: string, path: string): boolean {
  const re = new RegExp(
    "^" +
      pattern
        .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
        .replace(/\/\*\w+$/, "/.+")
        .replace(/:\w+/g, "[^/]+") +
      "/?$",
  );
  return re.test(path);
}

/** The methods some route takes on this path (a 405's Allow header); empty when no route has it (404). */
export function methodsAllowedOn(path: string): string[] {
  return [...new Set(ROUTES.filter((r) => routeMatches(r.path, path)).map((r) => r.method))];
}
