import {
  ADMIN_PREFIX,
  AdminOperations,
  BillingEndpoints,
  buildOpenApiDocument,
  CABINET_API_PREFIX,
  CabinetEndpoints,
  CabinetMemberOperations,
  ModelOperations,
  type OpenApiDocument,
} from "@meter/contracts";
import { createLogger, Metrics, type InternalAuth } from "@meter/service-kit";
import { mountedRoutes, openApiPathOf, type MountedRoute } from "@meter/testing";
import { createApp, type BillingServices } from "../src/app";

/** billing-ledger's routes as mounted; nothing is called, so the rules behind them are left out. */
function billingRoutes(): MountedRoute[] {
  const app = createApp({
    auth: {} as InternalAuth,
    logger: createLogger("billing-ledger-test", "silent"),
    metrics: new Metrics("billing-ledger"),
    services: { cabinet: {} } as unknown as BillingServices,
    crossCheck: {} as never,
    readiness: [],
  });
  return mountedRoutes(app as unknown as Parameters<typeof mountedRoutes>[0]);
}

/** Where the gateway serves what billing mounts: the member API at /cabinet/api, the rest as is. */
const PUBLIC_DOORS: [billing: string, gateway: string][] = [
  [`${ADMIN_PREFIX}/`, `${ADMIN_PREFIX}/`],
  ["/cabinet/v1/", `${CABINET_API_PREFIX}/`],
  ["/v1/", "/v1/"],
];
/** Internal endpoints: the contracts' catalogs, not the public document. Health and metrics: every service's. */
const INTERNAL = new Set([...Object.values(BillingEndpoints), ...Object.values(CabinetEndpoints)].map((e) => `${e.method} ${e.path}`));
const EVERY_SERVICE = new Set(["GET /healthz", "GET /readyz", "GET /metrics"]);

/** The routes billing mounts where no public operation of the document is (empty when none). */
function undocumentedRoutes(routes: MountedRoute[], doc: OpenApiDocument): string[] {
  return routes
    .filter((r) => !INTERNAL.has(`${r.method} ${r.path}`) && !EVERY_SERVICE.has(`${r.method} ${r.path}`))
    .filter((r) => {
      const door = PUBLIC_DOORS.find(([billing]) => r.path.startsWith(billing));
      if (!door) return true;
      const publicPath = openApiPathOf(door[1] + r.path.slice(door[0].length));
      return !doc.paths[publicPath]?.[r.method.toLowerCase()];
    })
    .map((r) => `${r.method} ${r.path}`);
}

describe("billing-ledger's routes and the OpenAPI document", () => {
  const routes = billingRoutes();
  const doc = buildOpenApiDocument();

  it("finds every admin, cabinet and public route billing mounts in /openapi.json, by method and path", () => {
    expect(routes.filter((r) => r.path.startsWith(ADMIN_PREFIX)).length).toBeGreaterThanOrEqual(25);
    expect(undocumentedRoutes(routes, doc)).toEqual([]);
  });

  it("mounts every operation the document gives billing (admin, the cabinet's member API, the catalog)", () => {
    const mounted = new Set(routes.map((r) => `${r.method.toLowerCase()} ${openApiPathOf(r.path)}`));
    const expected = [
      ...Object.values(AdminOperations).map((op) => `${op.method} ${op.path}`),
      ...Object.values(CabinetMemberOperations).map((op) => `${op.method} ${op.path.replace(CABINET_API_PREFIX, "/cabinet/v1")}`),
      ...Object.values(ModelOperations).map((op) => `${op.method} ${op.path}`),
    ];
    expect(expected.filter((e) => !mounted.has(e))).toEqual([]);
  });

  it("fails on a route the document does not have (the check can fail)", () => {
    const stray: MountedRoute = { method: "GET", path: `${ADMIN_PREFIX}/users/:user_id/secrets` };
    expect(undocumentedRoutes([...routes, stray], doc)).toEqual([`GET ${ADMIN_PREFIX}/users/:user_id/secrets`]);
    const { [`${ADMIN_PREFIX}/holds`]: _removed, ...rest } = doc.paths;
    expect(undocumentedRoutes(routes, { ...doc, paths: rest })).toEqual([`GET ${ADMIN_PREFIX}/holds`]);
    expect(undocumentedRoutes([{ method: "GET", path: "/debug/vars" }], doc)).toEqual(["GET /debug/vars"]);
  });
});
