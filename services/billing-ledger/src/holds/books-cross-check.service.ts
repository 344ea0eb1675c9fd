import {
  MediaOperation,
  type AllowanceSpend,
  type FinalHold,
  type FinalHoldsCursor,
  type FinalHoldsResponse,
  type Hold,
  type HoldSource,
  type Operation,
} from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { HoldOwners } from "./hold-owners.adapter";
import type { LedgerOp } from "./hold-ops.repository";
import type { HoldRepository } from "./hold.repository";
import type { HoldService } from "./hold.service";
import type { GrantSignatures, Unverified } from "./grant-signatures";
import { BillingErrors } from "../errors";
import { everyInterval, type Stoppable } from "./interval";

/** Final records per call to an owner (FinalHoldsRequest's limit). */
const PAGE = 500;

/**
 * The operations each owner places holds for (text: its requests; media-jobs: its jobs, MediaOperation):
 * its listing is believed only for these.
 */
const OPERATIONS_OF: Record<HoldSource, readonly Operation[]> = { text: ["text"], "media-jobs": MediaOperation.options, mcp: [], files: [] };

/**
 * How an owner's final record and billing's hold disagree:
 * - `missing_at_billing`: the owner settled it, billing has no such hold (billing's database lost it); repaired;
 * - `unresolved_at_billing`: billing still holds it active (the owner's command is lost or late); repaired;
 * - `status_differs`, `amount_differs`: both resolved it, differently; the first resolution stands, a person looks;
 * - `missing_at_owner`: billing settled a hold of the owner's that the owner no longer has (its database
 *   lost it); billing's record is the surviving side and the charge stands;
 * - `rejected_owner_claim`: the owner's record speaks for what is not its own to say (`rejected` says
 *   why): nothing moves, a person looks;
 * - `unverifiable`: a repair would apply, but billing's signature does not cover the record (`unverified`
 *   says why, `would_repair` what the repair was): it is never repaired automatically; an operator may
 *   repair it by hand (repairByHand), which is logged.
 */
export type CrossCheckKind =
  "missing_at_billing" | "unresolved_at_billing" | "status_differs" | "amount_differs" | "missing_at_owner" | "rejected_owner_claim" | "unverifiable";

/**
 * Why an owner's record was not believed: a hold (or allowance) billing has from another source, a
 * key not of the organization the record names (or not the one billing has), an operation the owner
 * places no holds for, a charge above the record's own estimate (or above billing's hold).
 */
export type RejectedClaim = "foreign_hold" | "key_not_of_organization" | "operation_not_served" | "settled_over_estimate";

export interface CrossCheckDifference {
  source: HoldSource;
  kind: CrossCheckKind;
  hold_id: string;
  owner?: FinalHold;
  billing?: Hold;
  /** The repair applied this pass (a recovery, settlement or release), or false when none applies. */
  repaired: boolean;
  /** `rejected_owner_claim`: what the record claimed that its owner may not. */
  rejected?: RejectedClaim;
  /** `unverifiable`: why billing's signature does not cover the record, and the repair it would have had. */
  unverified?: Unverified;
  would_repair?: CrossCheckKind;
}

/** A difference found, with the op that repairs it (if one does) and whether that op may still come as the owner's own command. */
interface Found {
  difference: CrossCheckDifference;
  op?: LedgerOp;
  awaitsCommand?: boolean;
  /** A request on an allowance billing has no open record of: the allowance, which its holder is told to close. */
  allowanceUnknown?: string;
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

/** What an operator's repair by hand did: the difference it repaired, and the outcome of its op. */
export interface HandRepair {
  difference: CrossCheckDifference;
  outcome: string;
}

/**
 * The books cross-check: every hold an owner (text, media-jobs) knows as final, its final state and
 * amount against billing's record of it, both ways, through the owner's signed internal listing
 * (HoldOwnerEndpoints.finalHolds). No service reads another's database. The owner's answer says what
 * happened; what it may be repaired for is billing's own word: a repair applies only to a record that
 * billing's signature of the grant covering it verifies (GrantSignatures), within the signed amount.
 * Repairs are idempotent on the hold id, so a pass run any number of times (or on several replicas at
 * once) charges nothing twice.
 */
export class BooksCrossCheckService {
  constructor(
    private readonly holdReads: HoldRepository,
    private readonly holds: HoldService,
    private readonly owners: HoldOwners,
    private readonly grants: GrantSignatures,
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
    const unknownAllowances = new Set<string>();
    do {
      const page = await this.owners.finalHolds(source, { after, limit: PAGE });
      after = page.next;
      restoredAt = page.restored_at ? new Date(page.restored_at) : null;
      if (page.holds.length === 0) break;
      oldest ??= new Date(page.holds[0]!.final_at);
      compared += page.holds.length;
      for (const h of page.holds) known.add(h.hold_id);
      const sides = await this.billingSides(page.holds);
      const found: Found[] = [];
      for (const owner of page.holds) {
        const d = differenceOf(source, owner, sides(owner));
        if (d && (!d.awaitsCommand || new Date(owner.final_at) < settledBefore)) found.push(this.underSignature(source, owner, d));
      }
      await this.settle(found, report, repair);
      // Told even when the record is not repaired: billing has no open record of the allowance either way.
      if (repair)
        for (const f of found)
          if (f.allowanceUnknown && (f.difference.repaired || f.difference.kind === "unverifiable")) unknownAllowances.add(f.allowanceUnknown);
    } while (after);
    await this.closeUnknownAllowances(source, [...unknownAllowances]);
    return { compared, known, oldest, restoredAt };
  }

  /** What billing has of a page of final records: per record its hold, the allowance it names, and whether its key is of its organization. */
  private async billingSides(records: readonly FinalHold[]): Promise<(owner: FinalHold) => BillingSide> {
    // The holds, and the allowances the records name: a request on an allowance is repaired as its command only while billing has that allowance open.
    const ids = new Set(records.flatMap((h) => (h.allowance ? [h.hold_id, h.allowance.allowance_id] : [h.hold_id])));
    const [billing, organizationOf] = await Promise.all([
      this.holdReads.findMany([...ids]).then((holds) => new Map(holds.map((h) => [h.hold_id, h]))),
      this.holdReads.organizationsOfKeys([...new Set(records.map((h) => h.key_id))]),
    ]);
    return (owner) => ({
      billing: billing.get(owner.hold_id),
      allowance: owner.allowance ? billing.get(owner.allowance.allowance_id) : undefined,
      keyOfOrganization: organizationOf.get(owner.key_id) === owner.organization_id,
    });
  }

  /**
   * A repair stands only on billing's signature of the grant that covers the record: without it the
   * difference is `unverifiable` and nothing is applied. A recovery of a request on an allowance billing
   * has no open record of carries the allowance's signed amount, which its recoveries together never pass.
   */
  private underSignature(source: HoldSource, owner: FinalHold, found: Found): Found {
    if (!found.op) return found;
    const verified = this.grants.check(source, owner);
    if (!verified.ok) {
      const { op: _op, ...rest } = found;
      return { ...rest, difference: unverifiable(found.difference, verified.unverified) };
    }
    if (found.op.op !== "recover" || !verified.allowance) return found;
    return {
      ...found,
      op: { ...found.op, recovered_allowance_id: verified.allowance.allowance_id, allowance_amount_microrub: verified.allowance.amount_microrub },
    };
  }

  /**
   * An operator's repair of one record the cross-check reported (`unverifiable` above all: a record from
   * before grants were signed), on the operator's word instead of billing's signature
   * (`POST /admin/v1/books/cross-check/holds/{hold_id}/repair`). Every other rule stands: the owner speaks
   * only for its own holds, keys of the record's organization and its own estimate. Logged with the
   * operator's reason, which a recovery's ledger entries carry as their reference.
   */
  async repairByHand(holdId: string, reason: string): Promise<HandRepair> {
    for (const source of this.owners.sources()) {
      const owner = await this.findFinal(source, holdId);
      if (!owner) continue;
      const sides = await this.billingSides([owner]);
      const found = differenceOf(source, owner, sides(owner));
      if (!found?.op) {
        throw BillingErrors.nothingToRepair(
          holdId,
          found ? `${found.difference.kind}${found.difference.rejected ? ` (${found.difference.rejected})` : ""}` : "billing agrees",
        );
      }
      const reference = `repaired by hand: ${reason}`;
      const op = found.op.op === "recover" && owner.allowance ? { ...found.op, recovered_allowance_id: owner.allowance.allowance_id } : found.op;
      const [result] = await this.holds.apply([op.op === "recover" || op.op === "release" ? { ...op, reason: reference } : op]);
      if (!result || result instanceof Error) throw BillingErrors.holdOpFailed(holdId, result ?? new Error("no result"));
      const difference = { ...found.difference, repaired: ["recovered", "settled", "released", "already"].includes(result.outcome) };
      this.logger.warn(
        { source, hold_id: holdId, reason, outcome: result.outcome, kind: difference.kind, owner: claimOf(owner) },
        "books cross-check: a record repaired by hand, on the operator's word (not billing's signature)",
      );
      if (!difference.repaired) throw BillingErrors.nothingToRepair(holdId, `the repair does not fit billing's hold (${result.outcome})`);
      return { difference, outcome: result.outcome };
    }
    throw BillingErrors.finalRecordNotFound(holdId);
  }

  /** The owner's final record of a hold, paging through its listing (an operator's call, not a pass). */
  private async findFinal(source: HoldSource, holdId: string): Promise<FinalHold | undefined> {
    let after: FinalHoldsCursor | null = null;
    do {
      const page: FinalHoldsResponse = await this.owners.finalHolds(source, { after, limit: PAGE }).catch((err: unknown) => {
        throw BillingErrors.ownerUnreachable(source, err);
      });
      const owner = page.holds.find((h) => h.hold_id === holdId);
      if (owner) return owner;
      after = page.next;
    } while (after);
    return undefined;
  }

  /**
   * The holder still has these allowances, billing has none open: the holder closes them, so that its
   * requests on the key take a new grant (reserved here) instead. Best effort: the next pass tells again.
   */
  private async closeUnknownAllowances(source: HoldSource, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += PAGE) {
      const chunk = ids.slice(i, i + PAGE);
      try {
        const closed = await this.owners.unknownAllowances(source, chunk);
        this.logger.warn({ source, allowances: chunk, closed }, "books cross-check: the holder closed allowances billing has no open record of");
      } catch (err) {
        this.logger.warn({ source, allowances: chunk, err }, "books cross-check: the holder could not be told of allowances billing has no open record of");
      }
    }
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
  private async settle(found: Found[], report: CrossCheckReport, repair: boolean): Promise<void> {
    const repairs = repair ? found.filter((f) => f.op) : [];
    const results = repairs.length > 0 ? await this.holds.apply(repairs.map((f) => f.op!)) : [];
    repairs.forEach((f, i) => {
      const r = results[i]!;
      if (r instanceof Error) {
        this.logger.warn({ hold_id: f.difference.hold_id, err: r }, "books cross-check: a repair was not applied; the next pass tries again");
      } else {
        // "already": another replica, or the owner's own command, got there first; either way it is repaired.
        f.difference.repaired = ["recovered", "settled", "released", "already"].includes(r.outcome);
        // What the database refused the owner's word for, and moved nothing on: reported for a person.
        const rejected = REJECTED_BY_OUTCOME[r.outcome];
        if (rejected) Object.assign(f.difference, { kind: "rejected_owner_claim", rejected });
        else if (r.outcome === "exceeds_allowance") f.difference = unverifiable(f.difference, "over_signed_amount");
        else if (!f.difference.repaired)
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
        rejected: d.rejected,
        unverified: d.unverified,
        owner: d.owner ? claimOf(d.owner) : undefined,
        billing: d.billing ? { status: d.billing.status, settled: d.billing.settled_microrub, organization_id: d.billing.organization_id } : undefined,
      },
      "books cross-check: the owner's record and billing's differ",
    );
  }
}

/** What an owner's record claims, as logged. */
function claimOf(owner: FinalHold) {
  return {
    status: owner.status,
    settled: owner.settled_microrub,
    amount: owner.amount_microrub,
    organization_id: owner.organization_id,
    key_id: owner.key_id,
    operation: owner.operation,
    allowance_id: owner.allowance?.allowance_id,
    final_at: owner.final_at,
    signed: !!owner.grant,
  };
}

/** A difference whose repair billing's signature does not cover: reported with the repair it would have had, never applied. */
function unverifiable(d: CrossCheckDifference, why: Unverified): CrossCheckDifference {
  return { ...d, kind: "unverifiable", unverified: why, would_repair: d.kind, repaired: false };
}

/** The SQL outcomes of a repair that refuse the owner's word (apply_hold_ops checks them again, under its locks). */
const REJECTED_BY_OUTCOME: Partial<Record<string, RejectedClaim>> = {
  foreign: "foreign_hold",
  invalid_key: "key_not_of_organization",
  exceeds_hold: "settled_over_estimate",
};

/**
 * What an owner's record may not claim, whatever billing has: an operation it places no holds for, a
 * charge above its own estimate, a hold or allowance billing has from another source, or another key
 * or organization than billing's hold (or allowance) has. Undefined when the record is the owner's to give.
 */
function rejectionOf(source: HoldSource, owner: FinalHold, { billing, allowance, keyOfOrganization }: BillingSide): RejectedClaim | undefined {
  if (!OPERATIONS_OF[source].includes(owner.operation)) return "operation_not_served";
  if (!keyOfOrganization) return "key_not_of_organization";
  if ((owner.settled_microrub ?? 0) > owner.amount_microrub) return "settled_over_estimate";
  // A tombstone (a release before any placement) names no key: nobody's hold.
  const foreign = (h: Hold | undefined) => !!h && h.key_id !== null && h.source !== source;
  if (foreign(billing) || foreign(allowance)) return "foreign_hold";
  const otherKey = (h: Hold | undefined) => !!h && h.key_id !== null && (h.organization_id !== owner.organization_id || h.key_id !== owner.key_id);
  if (otherKey(billing) || otherKey(allowance) || (owner.allowance && owner.allowance.key_id !== owner.key_id)) return "key_not_of_organization";
  return undefined;
}

/** What billing has of one final record: its hold, the allowance the record names, and whether the record's key is of the organization it names. */
interface BillingSide {
  billing: Hold | undefined;
  allowance: Hold | undefined;
  keyOfOrganization: boolean;
}

/**
 * The difference between one final record and billing's hold of it (and, for a request on an
 * allowance, billing's record of that allowance), with the op that repairs it if one does.
 */
function differenceOf(source: HoldSource, owner: FinalHold, side: BillingSide): Found | undefined {
  const { billing, allowance } = side;
  const base = { source, hold_id: owner.hold_id, owner, repaired: false };
  const rejected = rejectionOf(source, owner, side);
  if (rejected) {
    // Even a record that agrees with billing's: an owner that lies about one thing is worth a look.
    return { difference: { ...base, ...(billing ? { billing } : {}), kind: "rejected_owner_claim", rejected } };
  }
  if (!billing && owner.allowance && allowance?.kind === "allowance" && allowance.status === "active") {
    // A request placed on an allowance whose command never arrived (or is still on its way): applied
    // as that command would have been, so the estimate leaves the allowance and the allowance can close.
    return { difference: { ...base, kind: "missing_at_billing" }, op: allowanceCommandOf(source, owner, owner.allowance), awaitsCommand: true };
  }
  // A release billing never saw moved no money (often a placement that was refused): nothing to repair.
  if (!billing && owner.status === "released") return undefined;
  if (!billing) {
    // Lost with billing's database, its allowance's too (or that allowance is no longer open to it, so
    // no command can apply): placed and settled in one step, as a hold of its own, at once.
    return {
      ...(owner.allowance ? { allowanceUnknown: owner.allowance.allowance_id } : {}),
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
    // Named with its source, so the database too applies it only to this owner's hold.
    return {
      difference: { ...difference, kind: "unresolved_at_billing" },
      op:
        owner.status === "settled"
          ? { op: "settle", hold_id: owner.hold_id, organization_id: owner.organization_id, amount_microrub: owner.settled_microrub ?? 0, source }
          : { op: "release", hold_id: owner.hold_id, organization_id: owner.organization_id, reason: `released by ${source} (books cross-check)`, source },
      awaitsCommand: true,
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
    ? { op: "settle", hold_id: owner.hold_id, organization_id: owner.organization_id, amount_microrub: owner.settled_microrub ?? 0, source, allowance }
    : { op: "release", hold_id: owner.hold_id, organization_id: owner.organization_id, reason: `released by ${source} (books cross-check)`, source, allowance };
}
