import type { AllowanceSpend, Hold, HoldOp, HoldSource, RequestLogFields } from "@meter/contracts";
import type { Pool } from "pg";
import type { KeyOrganizations } from "../keys/key-organizations";
import type { Counter } from "prom-client";
import { requestLogInsertCte } from "./request-log-entries";
import { holdFromSql, type HoldSqlRow } from "./hold-record";
import { OpOrganizations } from "./op-organizations";

/** Billing's own op beside the contracts' HoldOp: the expiry sweep frees a hold nobody resolved. */
export interface ExpireOp {
  op: "expire";
  hold_id: string;
  /** The hold's organization, as the sweep read it. */
  organization_id: string;
  reason: string;
}

/**
 * The books cross-check's op: a hold its owner settled (its signed final record says so) that billing
 * has no record of, placed and settled in one step on the day the owner settled it.
 */
export interface RecoverOp {
  op: "recover";
  hold_id: string;
  organization_id: string;
  key_id: string;
  amount_microrub: number;
  settled_microrub: number;
  operation: string;
  model: string;
  source: HoldSource;
  owner_ref: string;
  /** ISO time the owner settled it. */
  settled_at: string;
  /**
   * A request on an allowance billing has no open record of: that allowance, and the amount of its
   * signed grant, which its recovered requests together never pass (none: an operator's repair by hand).
   */
  recovered_allowance_id?: string;
  allowance_amount_microrub?: number;
  /** The ledger entries' reference ("recovered" by default; an operator's repair names its reason). */
  reason?: string;
}

/**
 * A holder's settle or release (over HTTP or the bus), with the service whose signature it carried: it
 * applies only to a hold that service placed. A request's hold placed locally on an allowance names it
 * (`allowance`, bus commands only): billing records that hold as the command resolves it.
 */
export type CommandOp = Extract<HoldOp, { op: "settle" | "release" }> & { source: HoldSource; allowance?: AllowanceSpend; log?: RequestLogFields };

/**
 * What `apply_hold_ops` takes: a holder's place or grant (in its own name) or its settle or release
 * (CommandOp); billing's own settle or release (an operator's, or the hold audit's and the books
 * cross-check's on the owner's word: no source, any hold); an expiry; or a recovery.
 */
export type LedgerOp = HoldOp | CommandOp | ExpireOp | RecoverOp;

/** Every outcome `apply_hold_ops` reports (prisma/sql/apply_hold_ops.sql explains each). */
export type HoldOutcome =
  | "placed"
  | "granted"
  | "exists"
  | "id_reused"
  | "invalid_key"
  | "daily_budget_exceeded"
  | "insufficient_balance"
  | "settled"
  | "released"
  | "released_unplaced"
  | "closing"
  | "expired"
  | "recovered"
  | "already"
  | "conflict"
  | "exceeds_hold"
  | "not_found"
  | "foreign"
  | "exceeds_allowance";

export interface HoldOpResult {
  outcome: HoldOutcome;
  /** The hold as the op left it; null when there is none (a refused placement, an unknown id). */
  hold: Hold | null;
  /**
   * A refused placement that would have fitted without the money parked in allowances: they come back
   * within the holders' idle time, so the caller may try again after this many seconds.
   */
  retryAfterS?: number;
}

/** A batch the database did not apply even after retries: nothing of it was written. */
export class HoldBatchNotApplied extends Error {
  constructor(
    readonly reason: FailureReason,
    options: { cause: unknown },
  ) {
    super(`hold operations not applied (${reason})`, options);
    this.name = "HoldBatchNotApplied";
  }
}

export type FailureReason = "deadlock" | "lock_timeout" | "serialization" | "unavailable" | "error";

/** PostgreSQL errors after which the same batch may simply run again. */
const TRANSIENT: Record<string, FailureReason> = { "40P01": "deadlock", "55P03": "lock_timeout", "40001": "serialization" };

/**
 * The database out of reach or out of connections (SQLSTATE class 08, 53300, 57P01-57P03, or the pool's
 * own connect timeout): nothing ran, and the caller may try again later. Not run again here, where it
 * would only add to the load that caused it.
 */
function isUnavailable(e: unknown): boolean {
  const code = sqlStateOf(e);
  if (code.startsWith("08") || code === "53300" || /^57P0[123]$/.test(code)) return true;
  return code === "" && e instanceof Error && /^timeout exceeded when trying to connect$|^Connection terminated due to connection timeout$/.test(e.message);
}

export interface HoldOpsOptions {
  /** BUDGET_TIMEZONE. */
  timezone: string;
  /** The longest wait for a row lock before a batch fails and is retried. */
  lockTimeoutMs: number;
  /**
   * HOLD_BATCH_TRANSACTIONS=organization: one transaction per organization of a batch (Citus); otherwise
   * the batch is one transaction that splits it by organization inside (one PostgreSQL).
   */
  perOrganization?: boolean;
  /** Runs of one batch in all, after a deadlock or lock timeout. */
  attempts: number;
  /** ALLOWANCE_MAX_SHARE: the largest fraction of what a key and its organization have left one grant may take. */
  allowanceMaxShare: number;
  /** ALLOWANCE_RETRY_AFTER_S: what a refusal caused by money parked in allowances tells the caller to wait. */
  allowanceRetryAfterS: number;
  /** Tests move the clock across a budget day's midnight; production leaves it to the database's now(). */
  clock?: (() => Date) | undefined;
  metrics: HoldOpsMetrics;
}

export interface HoldOpsMetrics {
  /** Transactions run (each one call of apply_hold_ops). */
  transactions: Counter;
  /** Failed runs, by reason. */
  failures: Counter<"reason">;
}

/**
 * The one way hold operations reach the database. A batch is split by organization: by default inside
 * one call of the five-argument `apply_hold_ops` (one round trip, one commit); with perOrganization
 * here (OpOrganizations), each organization's part one call of `apply_hold_ops(org, ...)` (its own
 * commit), the parts run at once and their results put back in the batch's order, so no transaction
 * touches two organizations (docs/scale.md). A run that deadlocked runs again after a short random
 * pause; a part that still fails, or that waited too long for a lock, is applied op by op, so one op
 * that cannot be applied never fails its neighbours (and they wait for a stuck lock once at most).
 */
export class HoldOpsRepository {
  private readonly organizations: OpOrganizations;

  constructor(
    private readonly pool: Pool,
    private readonly opts: HoldOpsOptions,
    keys: KeyOrganizations,
  ) {
    this.organizations = new OpOrganizations(pool, keys);
  }

  /** One result per op, in order; an Error for an op the database did not apply (nothing of it was written). */
  async apply(ops: readonly LedgerOp[]): Promise<(HoldOpResult | Error)[]> {
    if (!this.opts.perOrganization) return this.applyPart(WHOLE, ops);
    let orgs: (string | null)[];
    try {
      orgs = await this.organizations.of(ops);
    } catch (e) {
      const reason = isUnavailable(e) ? "unavailable" : "error";
      this.opts.metrics.failures.inc({ reason });
      return ops.map(() => new HoldBatchNotApplied(reason, { cause: e }));
    }
    const parts = new Map<string | null, number[]>();
    orgs.forEach((org, i) => parts.set(org, [...(parts.get(org) ?? []), i]));
    const results: (HoldOpResult | Error)[] = new Array(ops.length);
    await Promise.all(
      [...parts].map(async ([org, at]) => {
        const done = await this.applyPart(
          org,
          at.map((i) => ops[i]!),
        );
        done.forEach((r, j) => (results[at[j]!] = r));
      }),
    );
    return results;
  }

  /** One organization's ops (org null: those whose organization billing could not tell), or WHOLE. */
  private async applyPart(org: Part, ops: readonly LedgerOp[]): Promise<(HoldOpResult | Error)[]> {
    try {
      return await this.runWithRetries(org, ops);
    } catch (e) {
      if (ops.length === 1) return [asError(e)];
      return Promise.all(ops.map((op) => this.runWithRetries(org, [op]).then((r) => r[0]!, asError)));
    }
  }

  private async runWithRetries(org: Part, ops: readonly LedgerOp[]): Promise<HoldOpResult[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.run(org, ops);
      } catch (e) {
        const reason = TRANSIENT[sqlStateOf(e)] ?? (isUnavailable(e) ? "unavailable" : "error");
        this.opts.metrics.failures.inc({ reason });
        // A lock timeout means one organization is stuck: the rest of a batch goes on op by op at once
        // rather than wait for it again; a lone op waits once more, in case the lock was only slow.
        const again = reason !== "error" && reason !== "unavailable" && attempt < this.opts.attempts && (reason !== "lock_timeout" || ops.length === 1);
        if (!again) throw new HoldBatchNotApplied(reason, { cause: e });
        // Jitter, so that two batches that just collided do not collide again in step.
        await sleep(Math.random() * 20 * 2 ** attempt);
      }
    }
  }

  private async run(org: Part, ops: readonly LedgerOp[]): Promise<HoldOpResult[]> {
    this.opts.metrics.transactions.inc();
    // A command carrying its request's log fields writes the entry in this same statement (one commit).
    const logged = ops.some((op) => "log" in op && op.log !== undefined);
    const whole = org === WHOLE;
    // The casts pick the function: the whole batch (split by organization in SQL) or one organization's.
    const apply = whole
      ? "apply_hold_ops($1::jsonb, $2::text, $3::integer, $4::numeric, $5::timestamptz)"
      : "apply_hold_ops($1::uuid, $2::jsonb, $3::text, $4::integer, $5::numeric, $6::timestamptz)";
    const sql = logged
      ? `WITH applied AS MATERIALIZED (SELECT * FROM ${apply}),
         logged AS (${requestLogInsertCte(whole ? "$1::jsonb" : "$2::jsonb", "applied")})
         SELECT ${RESULT_COLUMNS} FROM applied ORDER BY ord`
      : `SELECT ${RESULT_COLUMNS} FROM ${apply} ORDER BY ord`;
    // Named, so each connection parses and plans it once: planned anew at every call, the request log's
    // insert cost more than a small batch's own work (docs/benchmarks.md, "Issue 47").
    const { rows } = await this.pool.query<HoldSqlRow & { outcome: HoldOutcome; retry_after: boolean }>({
      name: `apply_hold_ops${whole ? "" : "_org"}${logged ? "_logged" : ""}`,
      text: sql,
      values: [
        ...(whole ? [] : [org]),
        JSON.stringify(ops),
        this.opts.timezone,
        this.opts.lockTimeoutMs,
        this.opts.allowanceMaxShare,
        this.opts.clock?.() ?? null,
      ],
    });
    if (rows.length !== ops.length) throw new Error(`apply_hold_ops returned ${rows.length} rows for ${ops.length} ops`);
    return rows.map((row) => ({
      outcome: row.outcome,
      hold: holdFromSql(row),
      ...(row.retry_after ? { retryAfterS: this.opts.allowanceRetryAfterS } : {}),
    }));
  }
}

/**
 * What the statement reads of `apply_hold_ops`, by name: a prepared statement's result columns are fixed,
 * and PostgreSQL refuses to run it again once `SELECT *` would give others, so a later release that adds
 * a column to the function (its migration Job runs while this release's pods do) would stop them.
 */
const RESULT_COLUMNS =
  "ord, hold_id, outcome, status, amount, settled, organization_id, key_id, operation, model, source, owner_ref, budget_day, created_at, resolved_at, kind, allowance_id, consumed, usable_until, retry_after";

/** A batch as one transaction, split by organization inside it (HOLD_BATCH_TRANSACTIONS=batch). */
const WHOLE = Symbol("whole batch");
type Part = string | null | typeof WHOLE;

function sqlStateOf(e: unknown): string {
  return (e as { code?: unknown }).code === undefined ? "" : String((e as { code?: unknown }).code);
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
