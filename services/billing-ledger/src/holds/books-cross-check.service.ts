import type { AllowanceSpend, FinalHold, FinalHoldsCursor, Hold, HoldSource } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { HoldOwners } from "./hold-owners.adapter";
import type { LedgerOp } from "./hold-ops.repository";
import type { HoldRepository } from "./hold.repository";
import type { HoldService } from "./hold.service";
import { everyInterval, type Stoppable } from "./interval";

/** Final records per call to an owner (FinalHoldsRequest's limit). */
const PAGE = 500;

/**
 * Whether the owner's command, still on its way, may yet resolve a difference: a hold still active
 * here, and a request's hold placed on an allowance that billing has no record of (it reaches billing
 * only with its settle or release). A per-request hold billing has no record of was placed before any
 * work, so billing lost it (a restore): repaired at once.
 */
function awaitsCommand(d: CrossCheckDifference): boolean {
  return d.kind === "unresolved_at_billing" || (d.kind === "missing_at_billing" && !!d.owner?.allowance);
}

/**
 * How an owner's final record and billing's hold disagree:
 * - `missing_at_billing`: the owner settled it, billing has no such hold (billing's database lost it); repaired;
 * - `unresolved_at_billing`: billing still holds it active (the owner's command is lost or late); repaired;
 * - `status_differs`, `amount_differs`: both resolved it, differently; the first resolution stands, a person looks;
 * - `missing_at_owner`: billing settled a hold of the owner's that the owner no longer has (its database
 *   lost it); billing's record is the surviving side and the charge stands.
 */
export type CrossCheckKind = "missing_at_billing" | "unresolved_at_billing" | "status_differs" | "amount_differs" | "missing_at_owner";

export interface CrossCheckDifference {
  source: HoldSource;
  kind: CrossCheckKind;
  hold_id: string;
  owner?: FinalHold;
  billing?: Hold;
  /** The repair applied this pass (a recovery, settlement or release), or false when none applies. */
  repaired: boolean;
}

export interface CrossCheckReport {
  /**
   * Per owner: its final records compared, or that it could not be asked (nothing was then concluded);
   * its restore point, and how many holds billing settled that the owner lost in that restore (billing's
   * record survives and the charge stands: nothing to repair, so not a difference).
   */
  owners: { source: HoldSource; compared: number; unreachable: boolean; restored_at: string | null; lost_in_restore: number }[];
  differences: CrossCheckDifference[];
}

export interface CrossCheckMetrics {
  /** billing_books_cross_check_differences_total{source, kind}. */
  differences: Counter<"source" | "kind">;
  repaired: Counter<"source" | "kind">;
}

/**
 * The books cross-check: every hold an owner (text, media-jobs) knows as final, its final state and
 * amount against billing's record of it, both ways, through the owner's signed internal listing
 * (HoldOwnerEndpoints.finalHolds). No service reads another's database: the owner's signed answer is
 * the proof a repair relies on. Repairs are idempotent on the hold id, so a pass run any number of
 * times (or on several replicas at once) charges nothing twice.
 */
export class BooksCrossCheckService {
  constructor(
    private readonly holdReads: HoldRepository,
    private readonly holds: HoldService,
    private readonly owners: HoldOwners,
    private readonly logger: Logger,
    private readonly metrics: CrossCheckMetrics,
    /** A hold its owner made final this recently may still have its command on the way: not yet a difference (awaitsCommand). */
    private readonly graceMs = 60_000,
  ) {}

  async run(opts: { repair: boolean } = { repair: true }): Promise<CrossCheckReport> {
    const report: CrossCheckReport = { owners: [], differences: [] };
    for (const source of this.owners.sources()) {
      const passStart = new Date();
      try {
        const { compared, known, oldest, restoredAt } = await this.compareOwner(source, report, opts.repair, new Date(passStart.getTime() - this.graceMs));
        const lost = oldest ? await this.findMissingAtOwner(source, known, oldest, passStart, restoredAt, report) : 0;
        report.owners.push({ source, compared, unreachable: false, restored_at: restoredAt?.toISOString() ?? null, lost_in_restore: lost });
        if (lost > 0)
          this.logger.info(
            { source, holds: lost, restored_at: restoredAt },
            "books cross-check: holds billing settled that the owner lost in its restore; the charges stand",
          );
      } catch (err) {
        report.owners.push({ source, compared: 0, unreachable: true, restored_at: null, lost_in_restore: 0 });
        this.logger.warn({ source, err }, "books cross-check: the owner could not be asked; nothing concluded about its holds");
      }
    }
    return report;
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.run(),
      (e) => this.logger.error({ err: e }, "books cross-check pass failed"),
    );
  }

  /** Pages through the owner's final records, compares each with billing's hold, and repairs what billing lacks. */
  private async compareOwner(source: HoldSource, report: CrossCheckReport, repair: boolean, settledBefore: Date) {
    const known = new Set<string>();
    let oldest: Date | undefined;
    let compared = 0;
    let restoredAt: Date | null = null;
    let after: FinalHoldsCursor | null = null;
    do {
      const page = await this.owners.finalHolds(source, { after, limit: PAGE });
      after = page.next;
      restoredAt = page.restored_at ? new Date(page.restored_at) : null;
      if (page.holds.length === 0) break;
      oldest ??= new Date(page.holds[0]!.final_at);
      compared += page.holds.length;
      for (const h of page.holds) known.add(h.hold_id);
      const billing = new Map((await this.holdReads.findMany(page.holds.map((h) => h.hold_id))).map((h) => [h.hold_id, h]));
      const found: { difference: CrossCheckDifference; op?: LedgerOp }[] = [];
      for (const owner of page.holds) {
        const d = differenceOf(source, owner, billing.get(owner.hold_id));
        if (d && (!awaitsCommand(d.difference) || new Date(owner.final_at) < settledBefore)) found.push(d);
      }
      await this.settle(found, report, repair);
    } while (after);
    return { compared, known, oldest, restoredAt };
  }

  /**
   * Billing's settled holds of this owner, since the owner's oldest record, that the owner does not
   * list: those placed before its restore point were lost in the restore (returned as a count); any
   * other is a difference nothing explains.
   */
  private async findMissingAtOwner(
    source: HoldSource,
    known: Set<string>,
    from: Date,
    before: Date,
    restoredAt: Date | null,
    report: CrossCheckReport,
  ): Promise<number> {
    let lost = 0;
    let afterId: string | undefined;
    for (;;) {
      const page = await this.holdReads.settledOwnedBy(source, from, before, PAGE, afterId);
      for (const hold of page) {
        if (known.has(hold.hold_id)) continue;
        if (restoredAt && new Date(hold.created_at) < restoredAt) lost++;
        else this.record(report, { source, kind: "missing_at_owner", hold_id: hold.hold_id, billing: hold, repaired: false });
      }
      if (page.length < PAGE) return lost;
      afterId = page.at(-1)!.hold_id;
    }
  }

  /** Applies the repairs of one page in one batch, then reports every difference with what became of it. */
  private async settle(found: { difference: CrossCheckDifference; op?: LedgerOp }[], report: CrossCheckReport, repair: boolean): Promise<void> {
    const repairs = repair ? found.filter((f) => f.op) : [];
    const results = repairs.length > 0 ? await this.holds.apply(repairs.map((f) => f.op!)) : [];
    repairs.forEach((f, i) => {
      const r = results[i]!;
      if (r instanceof Error) {
        this.logger.warn({ hold_id: f.difference.hold_id, err: r }, "books cross-check: a repair was not applied; the next pass tries again");
      } else {
        // "already": another replica, or the owner's own command, got there first; either way it is repaired.
        f.difference.repaired = ["recovered", "settled", "released", "already"].includes(r.outcome);
        if (!f.difference.repaired)
          this.logger.error({ hold_id: f.difference.hold_id, outcome: r.outcome }, "books cross-check: the repair does not fit the hold");
      }
    });
    for (const f of found) this.record(report, f.difference);
  }

  private record(report: CrossCheckReport, d: CrossCheckDifference): void {
    report.differences.push(d);
    this.metrics.differences.inc({ source: d.source, kind: d.kind });
    if (d.repaired) this.metrics.repaired.inc({ source: d.source, kind: d.kind });
    this.logger.warn(
      {
        source: d.source,
        kind: d.kind,
        hold_id: d.hold_id,
        repaired: d.repaired,
        owner: d.owner ? { status: d.owner.status, settled: d.owner.settled_microrub, final_at: d.owner.final_at } : undefined,
        billing: d.billing ? { status: d.billing.status, settled: d.billing.settled_microrub, organization_id: d.billing.organization_id } : undefined,
      },
      "books cross-check: the owner's record and billing's differ",
    );
  }
}

/** The difference between one final record and billing's hold of it, with the op that repairs it if one does. */
function differenceOf(source: HoldSource, owner: FinalHold, billing: Hold | undefined): { difference: CrossCheckDifference; op?: LedgerOp } | undefined {
  const base = { source, hold_id: owner.hold_id, owner, repaired: false };
  if (!billing && owner.allowance) {
    // A request placed on an allowance whose command never arrived: applied as that command would
    // have been, so the estimate leaves the allowance and the allowance can close.
    return { difference: { ...base, kind: "missing_at_billing" }, op: allowanceCommandOf(source, owner, owner.allowance) };
  }
  if (!billing) {
    // A release billing never saw moved no money (often a placement that was refused): nothing to repair.
    if (owner.status === "released") return undefined;
    return {
      difference: { ...base, kind: "missing_at_billing" },
      op: {
        op: "recover",
        hold_id: owner.hold_id,
        organization_id: owner.organization_id,
        key_id: owner.key_id,
        amount_microrub: owner.amount_microrub,
        settled_microrub: owner.settled_microrub ?? 0,
        operation: owner.operation,
        model: owner.model,
        source,
        owner_ref: owner.owner_ref,
        settled_at: owner.final_at,
      },
    };
  }
  const difference = { ...base, billing };
  if (billing.status === "active") {
    return {
      difference: { ...difference, kind: "unresolved_at_billing" },
      op:
        owner.status === "settled"
          ? { op: "settle", hold_id: owner.hold_id, amount_microrub: owner.settled_microrub ?? 0 }
          : { op: "release", hold_id: owner.hold_id, reason: `released by ${source} (books cross-check)` },
    };
  }
  const billingCharged = billing.status === "settled";
  if (billingCharged !== (owner.status === "settled")) return { difference: { ...difference, kind: "status_differs" } };
  if (billingCharged && billing.settled_microrub !== owner.settled_microrub) return { difference: { ...difference, kind: "amount_differs" } };
  return undefined;
}

/** The settle or release an owner's outbox sends for a request's hold placed on an allowance. */
function allowanceCommandOf(source: HoldSource, owner: FinalHold, allowance: AllowanceSpend): LedgerOp {
  return owner.status === "settled"
    ? { op: "settle", hold_id: owner.hold_id, amount_microrub: owner.settled_microrub ?? 0, source, allowance }
    : { op: "release", hold_id: owner.hold_id, reason: `released by ${source} (books cross-check)`, source, allowance };
}
