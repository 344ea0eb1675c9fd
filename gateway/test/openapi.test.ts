import { execFileSync } from "node:child_process";
import path from "node:path";
import { ErrorCatalog, type OpenApiDocument } from "@meter/contracts";
import { OPENAPI_PATH, ROUTES, routeMatches } from "../src/routes";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";

/** The OpenAPI 3.1 validator's verdict on a document (it is an ES module: run by node, not jest). */
function validate(doc: unknown): { valid: boolean; version: string; errors: unknown[] } {
  const out = execFileSync(process.execPath, [path.join(__dirname, "support", "validate-openapi.mjs")], { input: JSON.stringify(doc), encoding: "utf8" });
  return JSON.parse(out) as { valid: boolean; version: string; errors: unknown[] };
}

let g: GatewayHarness;
let doc: OpenApiDocument;
beforeAll(async () => {
  g = await startGateway();
  const res = await fetch(`${g.url}${OPENAPI_PATH}`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await res.json()) as OpenApiDocument;
}, 60_000);
afterAll(async () => {
  await g?.close();
});

/** `{file_id}` -> a value, so a documented path can be matched against the gateway's route patterns. */
const concrete = (p: string) => p.replace(/\{\w+\}/g, "x1");
const documented = () => Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => ({ method: m.toUpperCase(), path: p })));

describe("GET /openapi.json", () => {
  it("is served without a key and is a valid OpenAPI 3.1 document", () => {
    expect(validate(doc)).toEqual({ valid: true, version: "3.1", errors: [] });
  });

  it("documents every public route of the gateway, and no route the gateway does not have", () => {
    const undocumented = ROUTES.filter((r) => !documented().some((d) => d.method === r.method && routeMatches(r.path, concrete(d.path)))).map(
      (r) => `${r.method} ${r.path}`,
    );
    expect(undocumented).toEqual([]);
    const own = new Set([OPENAPI_PATH, "/healthz"]);
    const invented = documented().filter((d) => !own.has(d.path) && !ROUTES.some((r) => r.method === d.method && routeMatches(r.path, concrete(d.path))));
    expect(invented).toEqual([]);
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
