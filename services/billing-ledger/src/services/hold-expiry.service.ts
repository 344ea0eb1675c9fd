import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { HoldRepository } from "../repositories/hold.repository";
import type { HoldService } from "./hold.service";

/**
 * Holds are resolved by the service that placed them (its reconciler settles or releases them after
 * any crash). One still active after HOLD_EXPIRY_HOURS means that failed: it is expired, which frees the
 * reservation with nothing charged, and reported loudly (error log, metric, `expire` ledger entry and
 * the books check's count) rather than released silently. Safe on several replicas: expiring is idempotent.
 */
export class HoldExpiryService {
  constructor(
    private readonly holdReads: HoldRepository,
    private readonly holds: HoldService,
    private readonly expiryHours: number,
    private readonly logger: Logger,
    private readonly expired: Counter<"source">,
  ) {}

  async sweep(limit = 500): Promise<number> {
    const due = await this.holdReads.list({
      status: "active",
      createdBefore: new Date(Date.now() - this.expiryHours * 3_600_000),
      oldestFirst: true,
      limit,
    });
    let count = 0;
    for (const { hold_id: id } of due) {
      const r = await this.holds.expire(id);
      if (r.outcome !== "expired") continue;
      count++;
      this.expired.inc({ source: r.hold.source ?? "unknown" });
      this.logger.error(
        { hold_id: id, source: r.hold.source, organization_id: r.hold.organization_id, amount: String(r.hold.amount), created_at: r.hold.created_at },
        "hold expired without being settled or released; its reservation is freed and nothing was charged",
      );
    }
    return count;
  }

  start(intervalMs: number): { stop(): void } {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.sweep()
        .catch((e: unknown) => this.logger.error({ err: e }, "hold expiry sweep failed"))
        .finally(() => {
          running = false;
        });
    }, intervalMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }
}
