import type { Express, RequestHandler } from "express";
import {
  AdminHealthOperations,
  SCOPE_OF_OPERATION,
  Operation,
  type Identity,
  type KeyIdentity,
  InternalHeaders,
  UNSIGNED_PAYLOAD,
  buildOpenApiDocument,
} from "@meter/contracts";
import { AppError, createServiceApp, markRequest, type InternalAuth, type Logger, type Metrics } from "@meter/service-kit";
import { OPENAPI_PATH, ROUTES, type RouteSpec, type ServiceName, methodsAllowedOn } from "./routes";
import { assertAdminToken } from "./auth/admin-token";
import { presentedKey } from "./auth/credentials";
import type { KeyVerifier } from "./auth/key-verifier";
import { bearerChallenge } from "./http/bearer-challenge";
import { jsonBodyGuard } from "./http/body";
import type { BodyPace } from "./http/body-pace";
import { withoutInternalEndpoints } from "./http/internal-port";
import { lingeringClose } from "./http/lingering-close";
import { admission, type AdmissionLimits } from "./overload/admission";
import type { PublishedModels } from "./catalog/published-models";
import { serviceProxy } from "./proxy/service-proxy";
import type { RefusalCapture } from "./refusals/refusal-capture";
import type { HealthReporter } from "./health/health-report";
import { adminHealthRoute } from "./health/health.routes";

export interface GatewayDeps {
  logger: Logger;
  metrics: Metrics;
  /** Signs the identity of every forwarded request, for the service it goes to. */
  auth: InternalAuth;
  adminToken: string;
  keys: KeyVerifier;
  /** Base URL of each service that exists (or its replicas' URLs); a route to one that does not answers 503. */
  services: Partial<Record<ServiceName, string | readonly string[]>>;
  limits: { text: number; json: number; mcp: number };
  /** How fast a body must arrive: a slower one is 408 `request_timeout`. */
  bodyPace: BodyPace;
  /** Bounds on requests in flight, per key (and its per-minute rate) and per service; over them requests are shed at once. */
  inFlight: AdmissionLimits;
  mediaEnabled: boolean;
  /** The web cabinet at /cabinet (createCabinet); without it /cabinet is 404. */
  cabinet?: RequestHandler;
  /** TRUST_PROXY: which proxies' X-Forwarded-For names the client (`req.ip`); false when none. */
  trustProxy: false | number | string[];
  /** The operator's health report (`GET /admin/v1/health`), which the gateway answers itself. */
  health: HealthReporter;
  /** `GET /v1/models` from the gateway's copy of the published catalog; without it, forwarded to billing. */
  models?: PublishedModels;
  /** Keys' refusals, for the request log (docs/api.md "Request log"); without it none is recorded. */
  refusals?: RefusalCapture;
}

/** Headers a client must never be able to set on the way in. */
const INTERNAL_HEADER_NAMES = Object.values(InternalHeaders);

export function createApp(deps: GatewayDeps): Express {
  const front = withoutInternalEndpoints(createPublicApp(deps), deps.logger);
  front.set("trust proxy", deps.trustProxy);
  return front;
}

/** The public port's routes, before the internal endpoints are hidden (createApp); the OpenAPI test walks them. */
export function createPublicApp(deps: GatewayDeps): Express {
  const proxies = new Map<ServiceName, RequestHandler>();
  for (const [name, url] of Object.entries(deps.services) as [ServiceName, string | readonly string[]][]) {
    proxies.set(
      name,
      serviceProxy(
        name,
        url,
        deps.logger,
        { minBytesPerSecond: deps.bodyPace.uploadMinBytesPerSecond, windowMs: deps.bodyPace.windowMs },
        deps.refusals?.answer,
      ),
    );
  }

  const bodyFor = (spec: RouteSpec): RequestHandler[] => {
    switch (spec.body) {
      case "text-json":
        return jsonBodyGuard(deps.limits.text, deps.bodyPace);
      case "mcp-json":
        return jsonBodyGuard(deps.limits.mcp, deps.bodyPace);
      case "json":
        return jsonBodyGuard(deps.limits.json, deps.bodyPace);
      default:
        return [];
    }
  };

  const admit = admission(deps.inFlight, deps.metrics);

  // Readiness is answered on the internal port only (createInternalApp); this app's /readyz is hidden.
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: [], trustIncomingRequestId: false }, (app) => {
    app.set("trust proxy", deps.trustProxy);
    app.use(lingeringClose());

    // The MCP endpoint is POST only; GET (SSE streams) and DELETE (sessions) are not offered (spec).
    app.all("/mcp", (req, res, next) => {
      if (req.method === "POST") return next();
      res.setHeader("allow", "POST");
      next(new AppError("method_not_allowed", `${req.method} is not allowed on /mcp`));
    });

    if (deps.cabinet) app.use("/cabinet", deps.cabinet);

    const openApi = buildOpenApiDocument();
    app.get(OPENAPI_PATH, (_req, res) => {
      res.json(openApi);
    });

    // Before the admin API's forwarding to billing-ledger, whose `/admin/v1/*rest` would take it.
    app.get(AdminHealthOperations.health.path, ...adminHealthRoute(deps.health, deps.adminToken));

    // A body the gateway reads is read before the request takes its in-flight places (and counts in its
    // key's rate): a slow client holds none while it sends. A streamed one (uploads) takes its place
    // first and must keep a pace. What the gateway answers itself is admitted like the rest.
    const servedHere = (spec: RouteSpec): RequestHandler[] =>
      deps.models && spec.method === "GET" && spec.path === "/v1/models" ? [deps.models.handler()] : [];
    for (const spec of ROUTES) {
      const method = spec.method.toLowerCase() as "get" | "post" | "put" | "patch" | "delete";
      app[method](
        spec.path,
        authenticate(spec, deps),
        ...bodyFor(spec),
        admit(spec.service),
        ...servedHere(spec),
        checkQuoteScope(spec),
        forward(spec, deps, proxies),
      );
    }
    app.use(["/v1", "/mcp", "/admin"], bearerChallenge());

    // A known path with another method is 405; anything else falls through to the 404 handler.
    app.use((req, res, next) => {
      const allowed = methodsAllowedOn(req.path);
      if (allowed.length === 0) return next();
      res.setHeader("allow", allowed.join(", "));
      next(new AppError("method_not_allowed", `${req.method} is not allowed on ${req.path}`));
    });
    if (deps.refusals) app.use(deps.refusals.errors());
  });
}

function authenticate(spec: RouteSpec, deps: GatewayDeps): RequestHandler {
  return async (req, res, next) => {
    const auth = spec.auth;
    let identity: Identity;
    if (auth.kind === "admin") {
      assertAdminToken(req.headers, deps.adminToken);
      identity = { kind: "admin" };
    } else if (auth.kind === "link") {
      identity = { kind: "anonymous" };
    } else {
      const key = presentedKey(req.headers, auth.xApiKey ?? false);
      if (!key) {
        const how = auth.xApiKey ? "Authorization: Bearer <key> or x-api-key" : "Authorization: Bearer <key>";
        throw new AppError("authentication_required", `an API key is required (${how})`);
      }
      markRequest(req, "auth.start");
      const keyIdentity = await deps.keys.verify(key);
      markRequest(req, "auth.end");
      if (auth.anyOf.length > 0 && !auth.anyOf.some((s) => keyIdentity.scopes.includes(s))) {
        throw new AppError("insufficient_scope", `this API key needs the ${auth.anyOf.map((s) => `"${s}"`).join(" or ")} scope`);
      }
      identity = keyIdentity;
    }
    res.locals.identity = identity;
    res.locals.paid = spec.paid ?? false;
    next();
  };
}

/** `/v1/quotes` needs the right of the operation being quoted, which only the body tells. */
function checkQuoteScope(spec: RouteSpec): RequestHandler {
  return (_req, res, next) => {
    if (spec.path !== "/v1/quotes") return next();
    const op = Operation.safeParse((res.locals.json as { operation?: unknown } | undefined)?.operation);
    const identity = res.locals.identity as KeyIdentity;
    if (op.success) {
      const scope = SCOPE_OF_OPERATION[op.data];
      if (!identity.scopes.includes(scope)) {
        return next(new AppError("insufficient_scope", `quoting ${op.data} needs the "${scope}" scope`));
      }
    }
    next();
  };
}

function forward(spec: RouteSpec, deps: GatewayDeps, proxies: Map<ServiceName, RequestHandler>): RequestHandler {
  return (req, res, next) => {
    if (spec.media && !deps.mediaEnabled) {
      return next(new AppError("media_disabled", "media operations are turned off on this service (MEDIA_ENABLED); nothing was reserved"));
    }
    const proxy = proxies.get(spec.service);
    if (!proxy) return next(new AppError("service_unavailable", `the ${spec.service} service is not available; nothing was reserved`));
    for (const h of INTERNAL_HEADER_NAMES) delete req.headers[h];
    // Keys stay at the edge, except for MCP, which calls the public API back with the caller's own key.
    if (spec.service !== "mcp") {
      delete req.headers.authorization;
      delete req.headers["x-api-key"];
    }
    // The signature binds the body too: a JSON body as read here, a streamed one (uploads) not at all.
    const body = spec.body === "stream" ? UNSIGNED_PAYLOAD : (res.locals.rawBody ?? "");
    markRequest(req, "sign.start");
    Object.assign(req.headers, deps.auth.sign(res.locals.identity as Identity, { audience: spec.service, method: req.method, path: req.originalUrl, body }));
    markRequest(req, "sign.end");
    req.headers["x-request-id"] = req.requestId;
    return proxy(req, res, next);
  };
}
