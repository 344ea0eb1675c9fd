import type { HoldAuditVerdict, HoldSource } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { HoldOwners } from "./hold-owners.adapter";
import type { LedgerOp } from "./hold-ops.repository";
import type { HoldRepository } from "./hold.repository";
import type { HoldService } from "./hold.service";
import { everyInterval, type Stoppable } from "./interval";

/** The most holds one audit call names (HoldAuditRequest's limit). */
const MAX_PER_CALL = 500;

export interface HoldAuditOptions {
  /** Holds active longer than this are asked about (HOLD_AUDIT_AFTER_MS). */
  afterMs: number;
  /** Holds per call to an owner. */
  batchSize?: number;
  /** At most this many holds per owner in one pass; the rest wait for the next pass. */
  maxPerPass?: number;
}

export interface HoldAuditMetrics {
  verdicts: Counter<"source" | "verdict">;
  unreachable: Counter<"source">;
}

/** A hold asked about, as billing has it. */
interface AskedHold {
  kind: "request" | "allowance";
  /** An allowance: the estimates of the requests billing has recorded on it. */
  consumed: bigint;
}

export interface HoldAuditPass {
  asked: number;
  /** Holds this pass settled or released on their owner's word. */
  resolved: number;
  /** Owners that could not be asked this pass. */
  unreachable: HoldSource[];
}

/**
 * The hold audit: every hold is owned by a record of the service that placed it (`source`,
 * `owner_ref`), and that service resolves it. A hold still active after HOLD_AUDIT_AFTER_MS is asked
 * about: the owner answers, per hold, that it is still working on it (nothing is done), how it resolved
 * it (billing applies that settlement or release, in case the owner's own command was lost), or that no
 * record of it holds this hold (billing releases it, the ledger entry saying so). An owner that cannot
 * be reached changes nothing: its holds stay until it answers, or until the expiry sweep.
 */
export class HoldAuditService {
  constructor(
    private readonly holdReads: HoldRepository,
    private readonly holds: HoldService,
    private readonly owners: HoldOwners,
    private readonly opts: HoldAuditOptions,
    private readonly logger: Logger,
    private readonly metrics: HoldAuditMetrics,
  ) {}

  async run(): Promise<HoldAuditPass> {
    const pass: HoldAuditPass = { asked: 0, resolved: 0, unreachable: [] };
    const createdBefore = new Date(Date.now() - this.opts.afterMs);
    const batchSize = Math.min(this.opts.batchSize ?? MAX_PER_CALL, MAX_PER_CALL);
    const maxPerPass = this.opts.maxPerPass ?? 10_000;
    for (const source of this.owners.sources()) {
      let after: { createdAt: Date; id: string } | undefined;
      for (let asked = 0; asked < maxPerPass;) {
        const page = await this.holdReads.activeOwnedBy(source, createdBefore, batchSize, after);
        if (page.length === 0) break;
        const last = page.at(-1)!;
        after = { createdAt: last.created_at, id: last.hold_id };
        asked += page.length;
        pass.asked += page.length;
        let verdicts: HoldAuditVerdict[];
        try {
          verdicts = await this.owners.audit(
            source,
            page.map(({ hold_id, owner_ref, created_at }) => ({ hold_id, owner_ref, placed_at: created_at.toISOString() })),
          );
        } catch (err) {
          this.metrics.unreachable.inc({ source });
          this.logger.warn({ source, holds: page.length, err }, "hold audit: the owner could not be asked; its holds stay as they are");
          pass.unreachable.push(source);
          break;
        }
        pass.resolved += await this.applyVerdicts(source, new Map(page.map((h) => [h.hold_id, h])), verdicts);
        if (page.length < batchSize) break;
      }
    }
    return pass;
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.run(),
      (e) => this.logger.error({ err: e }, "hold audit pass failed"),
    );
  }

  /** Applies what the owner decided, in one batch; returns how many holds it resolved. */
  private async applyVerdicts(source: HoldSource, asked: Map<string, AskedHold>, verdicts: HoldAuditVerdict[]): Promise<number> {
    const ops: LedgerOp[] = [];
    const seen = new Set<string>();
    for (const v of verdicts) {
      // An owner speaks only for the holds it was asked about, once each.
      if (!asked.has(v.hold_id) || seen.has(v.hold_id)) continue;
      seen.add(v.hold_id);
      this.metrics.verdicts.inc({ source, verdict: v.status });
      const hold = asked.get(v.hold_id)!;
      const allowance = hold.kind === "allowance";
      if (v.status === "unknown" && !allowance) {
        // The owner's database was restored and this hold is older than that: its work may have been
        // delivered, so it is neither released nor charged here; it stays reserved for a person (docs/api.md).
        this.logger.error({ source, hold_id: v.hold_id }, "hold audit: the owner lost its record of this hold in a restore; the hold stays as it is");
      }
      // Closed with fewer estimates than billing has recorded on it: the holder lost those requests in a restore.
      const lost =
        allowance && (v.status === "unknown" || (v.status === "release" && v.used_microrub !== undefined && BigInt(v.used_microrub) < hold.consumed));
      const op = lost ? lostAllowanceRelease(source, v.hold_id) : opFor(source, v);
      if (op) ops.push(op);
    }
    if (ops.length === 0) return 0;
    const results = await this.holds.apply(ops);
    let resolved = 0;
    results.forEach((r, i) => {
      const op = ops[i]!;
      const log = { source, hold_id: op.hold_id, op: op.op, ...("reason" in op ? { reason: op.reason } : {}) };
      if (r instanceof Error) {
        this.logger.warn({ ...log, err: r }, "hold audit: could not apply the owner's verdict; the next pass asks again");
      } else if (r.outcome === "settled" || r.outcome === "released") {
        resolved++;
        // Worth a look: the owner's own settlement or release did not arrive.
        this.logger.warn({ ...log, outcome: r.outcome }, "hold audit resolved a hold its owner had left active");
      } else if (r.outcome === "closing") {
        // An allowance its holder closed: released once its requests' commands (or their repairs) are in.
        this.logger.warn({ ...log, outcome: r.outcome }, "hold audit closed an allowance its holder had closed; waiting for its requests");
      } else if (r.outcome !== "already") {
        this.logger.error({ ...log, outcome: r.outcome, status: r.hold?.status }, "hold audit: the owner's verdict does not fit the hold; left as it is");
      }
    });
    return resolved;
  }
}

/**
 * An allowance its holder lost its record of in a restore: no work is delivered on an allowance itself
 * (its requests' commands, already applied, are), and no holder can place a request on it again, so
 * what it still reserves is given back (docs/api.md, "Backups and the books cross-check").
 */
function lostAllowanceRelease(source: HoldSource, holdId: string): LedgerOp {
  return { op: "release", hold_id: holdId, reason: `its holder at ${source} lost its record in a restore`, source };
}

/** The op a verdict asks for, named with the owner's source: the database applies it only to a hold that owner placed. */
function opFor(source: HoldSource, v: HoldAuditVerdict): LedgerOp | undefined {
  switch (v.status) {
    case "pending":
    case "unknown":
      return undefined;
    case "settle":
      return { op: "settle", hold_id: v.hold_id, amount_microrub: v.amount_microrub, source };
    case "release":
      return { op: "release", hold_id: v.hold_id, reason: v.reason, source, ...(v.used_microrub === undefined ? {} : { used_microrub: v.used_microrub }) };
    case "absent":
      return { op: "release", hold_id: v.hold_id, reason: `no request behind it at ${source}`, source };
  }
}
