import type { Express } from "express";
import { createServiceApp, jsonBody, requireIdentity, type Logger, type Metrics, type ReadinessCheck } from "@meter/service-kit";
import { textRoutes } from "./http/text.routes";
import type { QuoteService } from "./services/quote.service";
import type { TextRequestService } from "./services/text-request.service";

export interface AppDeps {
  internalSecret: string;
  logger: Logger;
  metrics: Metrics;
  requests: TextRequestService;
  quotes: QuoteService;
  defaultMaxTokens: number;
  bodyLimitBytes: number;
  readiness: ReadinessCheck[];
}

export function createApp(deps: AppDeps): Express {
  return createServiceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness }, (app) => {
    app.use(
      "/v1",
      requireIdentity(deps.internalSecret, ["key"]),
      jsonBody({ limit: deps.bodyLimitBytes }),
      textRoutes({ requests: deps.requests, quotes: deps.quotes, defaultMaxTokens: deps.defaultMaxTokens }),
    );
  });
}
