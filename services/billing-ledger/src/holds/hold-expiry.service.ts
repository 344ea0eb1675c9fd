import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { HoldRepository } from "./hold.repository";
import type { HoldService } from "./hold.service";
import { everyInterval, type Stoppable } from "./interval";

/**
 * Holds are resolved by the service that placed them (its reconciler settles or releases them after
 * any crash; the hold audit asks it about those that linger). One still active after HOLD_EXPIRY_HOURS
 * means both failed: it is expired, which frees the reservation with nothing charged, and reported
 * loudly (error log, metric, `expire` ledger entry with the reason, the books check's count) rather
 * than released silently. Safe on several replicas: expiring is idempotent.
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
    if (due.length === 0) return 0;
    const reason = `not settled or released within ${this.expiryHours} h`;
    const results = await this.holds.apply(due.map((h) => ({ op: "expire" as const, hold_id: h.hold_id, organization_id: h.organization_id!, reason })));
    let count = 0;
    results.forEach((r, i) => {
      const hold = due[i]!;
      if (r instanceof Error) {
        this.logger.warn({ hold_id: hold.hold_id, err: r }, "could not expire a hold; the next sweep tries again");
        return;
      }
      if (r.outcome !== "expired") return;
      count++;
      this.expired.inc({ source: hold.source ?? "unknown" });
      this.logger.error(
        {
          hold_id: hold.hold_id,
          source: hold.source,
          owner_ref: hold.owner_ref,
          organization_id: hold.organization_id,
          amount: hold.amount_microrub,
          // An allowance frees only what its requests did not take.
          ...(hold.kind === "allowance" ? { kind: hold.kind, consumed: hold.consumed_microrub } : {}),
          created_at: hold.created_at,
        },
        "hold expired without being settled or released; its reservation is freed and nothing was charged",
      );
    });
    return count;
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.sweep(),
      (e) => this.logger.error({ err: e }, "hold expiry sweep failed"),
    );
  }
}
