import type { RequestHandler, Router } from "express";
import { Router as createRouter } from "express";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** One Prometheus registry per process, with the HTTP histogram every service reports. */
export class Metrics {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<"method" | "route" | "status">;

  constructor(readonly service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new Histogram({
      name: "http_request_duration_seconds",
      help: "HTTP request duration by route and status",
      labelNames: ["method", "route", "status"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
      registers: [this.registry],
    });
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames: [...labelNames], registers: [this.registry] });
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets?: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames: [...labelNames], registers: [this.registry], ...(buckets ? { buckets } : {}) });
  }

  /** A gauge; `collect` sets its values at each scrape (it may read a database: keep it cheap). */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[], collect?: (gauge: Gauge<L>) => Promise<void>): Gauge<L> {
    return new Gauge({
      name,
      help,
      labelNames: [...labelNames],
      registers: [this.registry],
      ...(collect
        ? {
            async collect(this: Gauge<L>) {
              await collect(this);
            },
          }
        : {}),
    });
  }

  /** Times each request; the route label is the matched route pattern, never the raw path (bounded cardinality). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const end = this.httpDuration.startTimer();
      res.on("finish", () => {
        const route = (req.route as { path?: string } | undefined)?.path;
        end({ method: req.method, route: route ? `${req.baseUrl}${route}` : "unmatched", status: String(res.statusCode) });
      });
      next();
    };
  }

  routes(): Router {
    const router = createRouter();
    router.get("/metrics", async (_req, res) => {
      res.setHeader("content-type", this.registry.contentType);
      res.send(await this.registry.metrics());
    });
    return router;
  }
}
