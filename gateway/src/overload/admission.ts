import type { RequestHandler } from "express";
import type { Identity } from "@meter/contracts";
import { AppError, type Metrics } from "@meter/service-kit";
import type { ServiceName } from "../routes";
import { InFlightLimit } from "./in-flight-limit";

/** Seconds a shed client is asked to wait: in-flight places free up as fast as requests finish. */
const RETRY_AFTER_S = "1";

export interface AdmissionLimits {
  /** Requests of one API key in flight at once. */
  perKey: number;
  /** Requests in flight to one service at once. */
  perService: number;
}

/**
 * Bounds the work in flight, per API key and per service, once a JSON body has arrived (app.ts) and
 * before anything is forwarded: what is over a bound is refused at once (429 `rate_limited` for the key,
 * 503 `service_unavailable` for the service, both with `Retry-After`) and never reaches a service, so
 * nothing is reserved for it. The places are held until the answer to the client is over.
 */
export function admission(limits: AdmissionLimits, metrics: Metrics): (service: ServiceName) => RequestHandler {
  const perKey = new InFlightLimit(limits.perKey);
  const perService = new InFlightLimit(limits.perService);
  const shed = metrics.counter("gateway_requests_shed_total", "Requests refused at once because a bound on work in flight was reached", ["reason", "service"]);

  return (service) => (_req, res, next) => {
    // The client left while its key was checked or its body read: 'close' has come and gone, nobody waits.
    if (res.destroyed) return;
    const identity = res.locals.identity as Identity;
    const releaseKey = identity.kind === "key" ? perKey.tryAcquire(identity.key_id) : () => undefined;
    if (!releaseKey) {
      shed.inc({ reason: "key_in_flight", service });
      return next(
        new AppError("rate_limited", `this API key already has ${perKey.max} requests in flight; retry when one is over`, {
          headers: { "retry-after": RETRY_AFTER_S },
        }),
      );
    }
    const releaseService = perService.tryAcquire(service);
    if (!releaseService) {
      // A refused request holds nothing, not even for the moment its refusal takes to be written.
      releaseKey();
      shed.inc({ reason: "service_in_flight", service });
      return next(
        new AppError("service_unavailable", `the ${service} service is at capacity; nothing was reserved, retry shortly`, {
          headers: { "retry-after": RETRY_AFTER_S },
        }),
      );
    }
    res.once("close", () => {
      releaseKey();
      releaseService();
    });
    next();
  };
}
