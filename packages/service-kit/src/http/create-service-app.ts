import express, { type Express } from "express";
import { pinoHttp } from "pino-http";
import type { Logger } from "../logger";
import type { Metrics } from "./metrics";
import { requestId } from "./request-id";
import { healthRoutes, type ReadinessCheck } from "./health";
import { errorHandler, notFoundHandler } from "./error-handler";
import { startTimings, timingMiddleware } from "../timing/request-timings";

export interface ServiceAppOptions {
  logger: Logger;
  metrics: Metrics;
  readiness: ReadinessCheck[];
  /** The gateway mints request ids; services trust the one it forwards. */
  trustIncomingRequestId?: boolean;
}

/**
 * A URL as the access log may keep it: credentials travel in query strings (a key pasted as `?key=`)
 * and in upload links (`/v1/uploads/<token>`: the link is the credential), so neither is written.
 */
function loggableUrl(url: string): string {
  const query = url.indexOf("?");
  const path = (query === -1 ? url : url.slice(0, query)).replace(/^(\/v1\/uploads\/)[^/]+/i, "$1[redacted]");
  return query === -1 ? path : `${path}?[redacted]`;
}

/**
 * The frame every service and the gateway share: request id, access log, metrics, health, then the
 * service's own routes, then the contract's 404 and error shape for everything that falls through.
 */
export function createServiceApp(opts: ServiceAppOptions, mount: (app: Express) => void): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // Opt-in (METER_TIMINGS_DIR, the benchmark's waterfall): nothing is mounted otherwise.
  startTimings(opts.metrics.service);
  const timings = timingMiddleware();
  if (timings) app.use(timings);
  app.use(requestId({ trustIncoming: opts.trustIncomingRequestId ?? true }));
  // The access log costs CPU on every request even when its lines are dropped; leave it out when they would be.
  if (opts.logger.isLevelEnabled("info")) {
    app.use(
      pinoHttp({
        logger: opts.logger,
        genReqId: (req) => (req as express.Request).requestId,
        customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? "error" : "info"),
        autoLogging: { ignore: (req) => req.url === "/healthz" || req.url === "/readyz" || req.url === "/metrics" },
        quietReqLogger: true,
        serializers: {
          req: (req: { method: string; url: string }) => ({ method: req.method, url: loggableUrl(req.url) }),
          res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
        },
      }),
    );
  }
  app.use(opts.metrics.middleware());
  app.use(healthRoutes(opts.readiness));
  app.use(opts.metrics.routes());
  mount(app);
  app.use(notFoundHandler());
  app.use(errorHandler(opts.logger));
  return app;
}
