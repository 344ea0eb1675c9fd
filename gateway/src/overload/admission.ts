import type { RequestHandler } from "express";
import type { Identity } from "@meter/contracts";
import { AppError, type Metrics } from "@meter/service-kit";
import type { ServiceName } from "../routes";
import { InFlightLimit } from "./in-flight-limit";
import { IN_FLIGHT_RETRY_AFTER_S, type KeyLimits } from "./key-limits";

export interface AdmissionLimits {
  /** A key's requests in flight and per minute, across every replica (redis-key-limits.ts). */
  perKey: KeyLimits;
  /** Requests in flight to one service at once, in this process: what keeps the process itself whole. */
  perService: number;
}

/**
 * Bounds the work in flight, per API key and per service, and a key's requests per minute, once a JSON
 * body has arrived (app.ts) and before anything is forwarded: what is over a bound is refused at once
 * (429 `rate_limited` for the key, 503 `service_unavailable` for the service, both with `Retry-After`)
 * and never reaches a service, so nothing is reserved for it. The places are held until the answer to
 * the client is over.
 */
export function admission(limits: AdmissionLimits, metrics: Metrics): (service: ServiceName) => RequestHandler {
  const perService = new InFlightLimit(limits.perService);
  const shed = metrics.counter("gateway_requests_shed_total", "Requests refused at once because a bound on work in flight was reached", ["reason", "service"]);

  return (service) => async (_req, res, next) => {
    // The client left while its key was checked or its body read: 'close' has come and gone, nobody waits.
    if (res.destroyed) return;
    // The process's own bound first: it costs nothing to ask, and a refusal here asks Redis nothing.
    const releaseService = perService.tryAcquire(service);
    if (!releaseService) {
      shed.inc({ reason: "service_in_flight", service });
      return next(
        new AppError("service_unavailable", `the ${service} service is at capacity; nothing was reserved, retry shortly`, {
          headers: { "retry-after": String(IN_FLIGHT_RETRY_AFTER_S) },
        }),
      );
    }
    const identity = res.locals.identity as Identity;
    const key = identity.kind === "key" ? await limits.perKey.admit(identity.key_id) : undefined;
    if (key && !key.admitted) {
      // A refused request holds nothing, not even for the moment its refusal takes to be written.
      releaseService();
      shed.inc({ reason: key.reason === "rate" ? "key_rate" : "key_in_flight", service });
      const message =
        key.reason === "rate"
          ? "too many requests for this API key this minute"
          : `this API key already has ${limits.perKey.maxInFlight} requests in flight; retry when one is over`;
      return next(new AppError("rate_limited", message, { headers: { "retry-after": String(key.retryAfterS) } }));
    }
    const release = () => {
      if (key?.admitted) key.release();
      releaseService();
    };
    // The client may have gone while Redis answered: its 'close' is over, so nothing would release.
    if (res.destroyed || res.closed) return release();
    res.once("close", release);
    next();
  };
}
