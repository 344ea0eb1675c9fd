import express, { type Express } from "express";
import { errorHandler, healthRoutes, notFoundHandler, requestId, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";

/** What the public port must not answer: they tell an outsider what runs behind the gateway and how. */
export const INTERNAL_PATHS = ["/readyz", "/metrics"];

/**
 * The public port answers only `/healthz` of the endpoints every service has: `/readyz` and `/metrics`
 * are 404 there, as any unknown path is, and live on the internal port (createInternalApp).
 */
export function withoutInternalEndpoints(app: Express, logger: Logger): Express {
  const front = express();
  front.disable("x-powered-by");
  front.set("etag", false);
  front.use(INTERNAL_PATHS, requestId({ trustIncoming: false }), notFoundHandler(), errorHandler(logger));
  front.use(app);
  return front;
}

/**
 * The internal port: `/healthz`, `/readyz` and `/metrics`, for probes and scraping. A failed readiness
 * check says which dependency failed, never how: an error text can carry internal addresses, and it is
 * in the log.
 */
export function createInternalApp(deps: { metrics: Metrics; readiness: ReadinessCheck[]; logger: Logger }): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const opaque = deps.readiness.map((c): ReadinessCheck => ({
    name: c.name,
    check: async () => {
      try {
        await c.check();
      } catch (err) {
        deps.logger.warn({ err, check: c.name }, "readiness check failed");
        throw new Error("unavailable");
      }
    },
  }));
  app.use(healthRoutes(opaque));
  app.use(deps.metrics.routes());
  app.use(notFoundHandler());
  app.use(errorHandler(deps.logger));
  return app;
}
