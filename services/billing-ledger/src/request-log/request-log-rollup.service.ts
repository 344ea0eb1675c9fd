import type { Logger } from "@meter/service-kit";
import { everyInterval, type Stoppable } from "../holds/interval";
import type { RequestAnalyticsStore } from "./request-analytics.store";

/**
 * Adds the request log's new entries to its hourly figures, off the request path: a pass every few
 * seconds takes what committed since the last one. Analytics read the entries it has not taken yet
 * beside the figures, so its pace decides only how much they read, never what they answer.
 */
export class RequestLogRollup {
  constructor(
    private readonly store: RequestAnalyticsStore,
    private readonly logger: Logger,
  ) {}

  runOnce(): Promise<number> {
    return this.store.rollUp();
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.runOnce(),
      (err) => this.logger.error({ err }, "request log roll-up pass failed"),
    );
  }
}
