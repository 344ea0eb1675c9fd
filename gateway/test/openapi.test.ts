import { execFileSync } from "node:child_process";
import path from "node:path";
import { buildCabinet } from "@meter/cabinet-web";
import { ADMIN_PREFIX, buildOpenApiDocument, CabinetMemberOperations, ErrorCatalog, type OpenApiDocument } from "@meter/contracts";
import { createLogger, Metrics, type InternalAuth } from "@meter/service-kit";
import { mountedRoutes, openApiPathOf, type MountedRoute } from "@meter/testing";
import { createPublicApp } from "../src/app";
import type { KeyVerifier } from "../src/auth/key-verifier";
import { LocalKeyLimits } from "../src/overload/key-limits";
import { createCabinet } from "../src/cabinet/cabinet";
import { INTERNAL_PATHS } from "../src/http/internal-port";
import { OPENAPI_PATH, ROUTES } from "../src/routes";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/** The OpenAPI 3.1 validator's verdict on a document (it is an ES module: run by node, not jest). */
function validate(doc: unknown): { valid: boolean; version: string; errors: unknown[] } {
  const out = execFileSync(process.execPath, [path.join(__dirname, "support", "validate-openapi.mjs")], { input: JSON.stringify(doc), encoding: "utf8" });
  return JSON.parse(out) as { valid: boolean; version: string; errors: unknown[] };
}

/** The gateway's public routes as mounted, cabinet included; nothing is called, so nothing behind them runs. */
async function gatewayRoutes(): Promise<MountedRoute[]> {
  const services = {
    text: "http://127.0.0.1:9",
    "media-jobs": "http://127.0.0.1:9",
    files: "http://127.0.0.1:9",
    "billing-ledger": "http://127.0.0.1:9",
    mcp: "http://127.0.0.1:9",
  };
  const auth = {} as InternalAuth;
  const unused = () => Promise.reject(new Error("not called"));
  const cabinet = createCabinet({
    auth,
    adminToken: "x".repeat(32),
    bundle: await buildCabinet(),
    services,
    mediaEnabled: true,
    secureCookies: "auto",
    jsonLimit: 1024,
    maxInFlight: 1,
    health: unused,
  });
  const app = createPublicApp({
    logger: createLogger("gateway-test", "silent"),
    metrics: new Metrics("gateway"),
    auth,
    adminToken: "x".repeat(32),
    keys: {} as KeyVerifier,
    services,
    limits: { text: 1024, json: 1024, mcp: 1024 },
    bodyPace: { timeoutMs: 1000, minBytesPerSecond: 1, uploadMinBytesPerSecond: 1, windowMs: 1000 },
    inFlight: { perKey: new LocalKeyLimits({ maxInFlight: 1, perMinute: 0 }), perService: 1 },
    mediaEnabled: true,
    cabinet,
    health: unused,
    trustProxy: false,
  });
  return mountedRoutes(app as unknown as Parameters<typeof mountedRoutes>[0]);
}

/** The admin API, forwarded whole to billing-ledger, which mounts each operation (its own test walks them). */
const ADMIN_FORWARD = `${ADMIN_PREFIX}/*rest`;

/** The routes the gateway mounts on its public port that the document does not list (empty when none). */
function undocumentedRoutes(routes: MountedRoute[], d: OpenApiDocument): string[] {
  const at = (p: string) => d.paths[p] ?? {};
  return routes
    .filter((r) => !(r.method === "GET" && INTERNAL_PATHS.includes(r.path)))
    .filter((r) => {
      const methods = at(openApiPathOf(r.path));
      if (r.path === ADMIN_FORWARD) return !Object.keys(d.paths).some((p) => p.startsWith(`${ADMIN_PREFIX}/`) && at(p)[r.method.toLowerCase()]);
      // app.all("/mcp"): answers 405 to the methods the document does not list.
      if (r.method === "ALL") return Object.keys(methods).length === 0;
      return !methods[r.method.toLowerCase()];
    })
    .map((r) => `${r.method} ${r.path}`);
}

let g: GatewayHarness;
let doc: OpenApiDocument;
let routes: MountedRoute[];
beforeAll(async () => {
  routes = await gatewayRoutes();
  g = await startGateway();
  const res = await fetch(`${g.url}${OPENAPI_PATH}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await res.json()) as OpenApiDocument;
}, 60_000);
afterAll(async () => {
  await g?.close();
});

const documented = () => Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => ({ method: m.toUpperCase(), path: p })));

describe("GET /openapi.json", () => {
  it("is served without a key and is a valid OpenAPI 3.1 document", () => {
    expect(validate(doc)).toEqual({ valid: true, version: "3.1", errors: [] });
  });

  it("lints clean beyond the schema: one operationId per operation, every path parameter declared", () => {
    type Op = { operationId?: string; parameters?: { name?: string; in?: string }[] };
    const ops = Object.entries(doc.paths).flatMap(([p, methods]) => Object.values(methods).map((op) => ({ p, op: op as Op })));
    const ids = ops.map(({ op }) => op.operationId);
    expect(ids.filter((id, i) => !id || ids.indexOf(id) !== i)).toEqual([]);
    const undeclared = ops.flatMap(({ p, op }) =>
      [...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).filter((name) => !op.parameters?.some((q) => q.in === "path" && q.name === name)),
    );
    expect(undeclared).toEqual([]);
  });

  it("is the document generated from the contracts' operations", () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
  });

  it("lists every route the gateway mounts (public, admin, cabinet), by method and path", () => {
    expect(routes.filter((r) => r.path.startsWith("/cabinet/api/")).length).toBeGreaterThanOrEqual(8);
    expect(undocumentedRoutes(routes, doc)).toEqual([]);
  });

  it("lists no operation the gateway cannot reach: each is mounted, or forwarded to billing-ledger, which mounts it", () => {
    const mounted = new Set(routes.map((r) => `${r.method.toLowerCase()} ${openApiPathOf(r.path)}`));
    const forwarded = (method: string, p: string) =>
      (p.startsWith(`${ADMIN_PREFIX}/`) && mounted.has(`${method} ${openApiPathOf(ADMIN_FORWARD)}`)) ||
      Object.values(CabinetMemberOperations).some((op) => op.method === method && op.path === p);
    expect(documented().filter((d) => !mounted.has(`${d.method.toLowerCase()} ${d.path}`) && !forwarded(d.method.toLowerCase(), d.path))).toEqual([]);
  });

  it("fails on a route the document does not have (the check can fail)", () => {
    const { "/v1/files/{file_id}/content": _removed, ...rest } = doc.paths;
    expect(undocumentedRoutes(routes, { ...doc, paths: rest })).toEqual(["GET /v1/files/:file_id/content"]);
    const { "/cabinet/api/sign-in": _signIn, ...withoutSignIn } = doc.paths;
    expect(undocumentedRoutes(routes, { ...doc, paths: withoutSignIn })).toEqual(["POST /cabinet/api/sign-in"]);
    const withoutAdmin = Object.fromEntries(Object.entries(doc.paths).filter(([p]) => !p.startsWith(ADMIN_PREFIX)));
    expect(undocumentedRoutes(routes, { ...doc, paths: withoutAdmin })).toEqual([
      "GET /admin/v1/health",
      "GET /admin/v1/text/providers",
      "GET /admin/v1/text/requests/:request_id",
      "GET /admin/v1/*rest",
      "POST /admin/v1/*rest",
      "PUT /admin/v1/*rest",
      "PATCH /admin/v1/*rest",
      "DELETE /admin/v1/*rest",
    ]);
  });

  it("names every error code of the catalog, each with its status, and only those", () => {
    const schemas = (doc.components as { schemas: Record<string, { enum?: string[] }> }).schemas;
    expect(new Set(schemas.ErrorCode?.enum)).toEqual(new Set(Object.keys(ErrorCatalog)));
    expect(doc["x-error-catalog"]).toEqual(ErrorCatalog);
    type ErrorAnswer = { content?: Record<string, { schema?: { allOf?: { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } }[] } }> };
    const answered = Object.values(doc.paths)
      .flatMap((methods) => Object.values(methods))
      .flatMap((op) => Object.entries((op as { responses: Record<string, ErrorAnswer> }).responses))
      .flatMap(([status, r]) =>
        (r.content?.["application/json"]?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? []).map((code) => ({
          status: Number(status),
          code,
        })),
      );
    expect(answered.length).toBeGreaterThan(0);
    expect(answered.filter(({ status, code }) => ErrorCatalog[code as keyof typeof ErrorCatalog] !== status)).toEqual([]);
  });

  it("documents the Idempotency-Key of every paid route", () => {
    for (const r of ROUTES.filter((r) => r.paid)) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, "{$1}")]?.[r.method.toLowerCase()] as { parameters?: { $ref?: string }[] } | undefined;
      expect(op?.parameters?.some((p) => p.$ref === "#/components/parameters/IdempotencyKey")).toBe(true);
    }
  });

  it("is refused by the validator when broken (the check can fail)", () => {
    const broken = JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;
    delete broken.info;
    expect(validate(broken).valid).toBe(false);
  });
});
