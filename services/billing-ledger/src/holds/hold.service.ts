import type { Hold, HoldOp, HoldSource, PlaceHoldRequest } from "@meter/contracts";
import { AppError, Batcher } from "@meter/service-kit";
import { BillingErrors } from "../errors";
import type { HoldOpResult, HoldOpsRepository, LedgerOp } from "./hold-ops.repository";
import type { HoldRepository } from "./hold.repository";
import { answerOf } from "./hold-answers";
import type { GrantSignatures } from "./grant-signatures";

/**
 * Holds: reserve before work, then settle for the actual cost or release. Each op is idempotent on the
 * caller-chosen hold id, and a hold is resolved exactly once; a conflicting second resolution is
 * refused with the hold's current state.
 *
 * The money rules themselves (budget, balance, the order of locks, what each outcome means) are SQL
 * functions, one per rule in prisma/sql, run by prisma/sql/apply_hold_ops.sql. A batch goes to it as
 * one call (`apply`, `answerAs`); single ops of concurrent callers share batches (`place`, `settle`, `release`),
 * several at a time, so holds of different organizations never wait for each other here.
 */
export class HoldService {
  private readonly singles: Batcher<LedgerOp, HoldOpResult>;

  constructor(
    private readonly ops: HoldOpsRepository,
    private readonly reads: HoldRepository,
    private readonly grants: GrantSignatures,
    opts: { maxBatch?: number; concurrency?: number } = {},
  ) {
    this.singles = new Batcher((batch) => this.ops.apply(batch), { maxBatch: opts.maxBatch ?? 200, concurrency: opts.concurrency ?? 4 });
  }

  /** A batch in one transaction: per op its outcome, or an Error when the database did not apply it. */
  apply(ops: readonly LedgerOp[]): Promise<(HoldOpResult | Error)[]> {
    return this.ops.apply(ops);
  }

  /**
   * A holder service's batch (`POST /internal/v1/hold-ops`) in one transaction, answered per op (the
   * hold, or the error the op is refused with), in the name of the service that signed it:
   * it places and grants as itself only, and every settle, release or close carries its source, so
   * another service's hold or allowance is refused (`foreign_hold`) and nothing of it moves. Nor is a
   * holder answered with another service's hold (a placement replaying a foreign hold's id). A
   * placement or grant is answered with billing's signature over what it granted (GrantSignatures),
   * which the holder keeps with its record: the books cross-check repairs a record only under it.
   */
  async answerAs(source: HoldSource, ops: readonly HoldOp[]): Promise<(Hold | AppError)[]> {
    const own = ops.map((op): LedgerOp | AppError => {
      if (op.op === "settle" || op.op === "release") return { ...op, source };
      return op.source === source ? op : BillingErrors.foreignHold(op.hold_id);
    });
    const sent = own.filter((op): op is LedgerOp => !(op instanceof AppError));
    const results = sent.length === 0 ? [] : await this.ops.apply(sent);
    let next = 0;
    return own.map((op) => {
      if (op instanceof AppError) return op;
      const result = results[next++]!;
      const hold = result instanceof Error ? null : result.hold;
      // A release's tombstone has no key and belongs to nobody: it is answered as it is.
      if (hold?.key_id && hold.source !== source) return BillingErrors.foreignHold(op.hold_id);
      const answer = answerOf(op, result);
      if (answer instanceof AppError || (op.op !== "place" && op.op !== "grant")) return answer;
      const signature = this.grants.of(answer);
      return signature ? { ...answer, grant_signature: signature } : answer;
    });
  }

  /** Resolves with the hold, which may not be active: a release of its id got there first. */
  place(req: PlaceHoldRequest): Promise<Hold> {
    return this.one({ op: "place", ...req });
  }

  settle(holdId: string, amount: number): Promise<Hold> {
    return this.one({ op: "settle", hold_id: holdId, amount_microrub: amount });
  }

  release(holdId: string, reason: string): Promise<Hold> {
    return this.one({ op: "release", hold_id: holdId, reason });
  }

  /** An operator frees a hold by hand (`POST /admin/v1/holds/{id}/release`); an unknown id is 404, not a tombstone. */
  async releaseByOperator(holdId: string, reason: string): Promise<Hold> {
    if (!(await this.reads.find(holdId))) throw BillingErrors.holdNotFound(holdId);
    return this.release(holdId, reason);
  }

  private async one(op: LedgerOp): Promise<Hold> {
    const answer = answerOf(op, await this.singles.submit(op).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e)))));
    if (answer instanceof AppError) throw answer;
    return answer;
  }
}
