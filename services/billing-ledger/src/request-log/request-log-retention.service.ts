import type { Logger } from "@meter/service-kit";
import { everyInterval, type Stoppable } from "../holds/interval";
import type { RequestAnalyticsStore } from "./request-analytics.store";
import type { RequestLogStore } from "./request-log.store";

/** How long entries are kept (docs/api.md "Request log"). */
export const REQUEST_LOG_RETENTION_DAYS = 90;
/** Rows per delete: short transactions, so the hold commands' inserts never wait long behind one. */
const BATCH = 5_000;

/**
 * Deletes entries older than 90 days, in bounded batches, until none is left, and the hourly figures
 * of those days (an hour's worth of rows per run); then waits for the next run.
 */
export class RequestLogRetention {
  constructor(
    private readonly store: RequestLogStore,
    private readonly figures: RequestAnalyticsStore,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async runOnce(): Promise<number> {
    const cutoff = new Date(this.clock().getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000);
    let total = 0;
    for (;;) {
      const n = await this.store.purgeBefore(cutoff, BATCH);
      total += n;
      if (n < BATCH) break;
    }
    await this.figures.purgeBefore(cutoff);
    if (total > 0) this.logger.info({ deleted: total, before: cutoff.toISOString() }, "request log entries past retention deleted");
    return total;
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.runOnce(),
      (err) => this.logger.error({ err }, "request log retention run failed"),
    );
  }
}
