import { Batcher } from "@meter/service-kit";
import type { Pool } from "pg";

export type HoldOp =
  | { op: "place"; hold_id: string; key_id: string; amount: number; operation: string; model: string; source: string }
  | { op: "settle"; hold_id: string; amount: number }
  | { op: "release"; hold_id: string; reason: string }
  | { op: "expire"; hold_id: string };

export type HoldOutcome =
  | "placed"
  | "exists"
  | "invalid_key"
  | "daily_budget_exceeded"
  | "insufficient_balance"
  | "settled"
  | "released"
  | "released_unplaced"
  | "expired"
  | "already"
  | "conflict"
  | "exceeds_hold"
  | "not_found";

export interface HoldRow {
  hold_id: string;
  status: "active" | "settled" | "released" | "expired" | null;
  amount: bigint | null;
  settled: bigint | null;
  organization_id: string | null;
  key_id: string | null;
  operation: string | null;
  model: string | null;
  source: string | null;
  budget_day: Date | null;
  created_at: Date | null;
  resolved_at: Date | null;
}

export interface HoldOpResult {
  outcome: HoldOutcome;
  hold: HoldRow;
}

/** PostgreSQL errors after which the whole batch may simply run again. */
const RETRYABLE = new Set(["40P01", "40001"]);

/**
 * Every hold operation of this process goes through one batcher into `apply_hold_ops`: concurrent
 * requests share a round trip and a commit, and a single in-flight transaction per process means its
 * own batches cannot deadlock each other (another replica's can; those are retried).
 */
export class HoldOpsRepository {
  private readonly batcher: Batcher<HoldOp, HoldOpResult>;

  constructor(
    private readonly pool: Pool,
    private readonly timezone: string,
    opts: { maxBatch?: number } = {},
  ) {
    this.batcher = new Batcher((ops) => this.applyBatch(ops), { maxBatch: opts.maxBatch ?? 200 });
  }

  apply(op: HoldOp): Promise<HoldOpResult> {
    return this.batcher.submit(op);
  }

  get pending(): number {
    return this.batcher.pending;
  }

  private async applyBatch(ops: HoldOp[]): Promise<(HoldOpResult | Error)[]> {
    try {
      return await this.run(ops);
    } catch (e) {
      if (ops.length === 1) throw e;
      // One bad op must not fail its neighbours: run them one by one to isolate it.
      return Promise.all(ops.map((op) => this.run([op]).then((r) => r[0]!, (err: unknown) => asError(err))));
    }
  }

  private async run(ops: HoldOp[]): Promise<HoldOpResult[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await this.pool.query<SqlHoldRow>("SELECT * FROM apply_hold_ops($1::jsonb, $2)", [JSON.stringify(ops), this.timezone]);
        return rows.map(({ ord: _ord, outcome, amount, settled, ...rest }) => ({
          outcome,
          hold: { ...rest, amount: amount === null ? null : BigInt(amount), settled: settled === null ? null : BigInt(settled) },
        }));
      } catch (e) {
        if (attempt < 5 && RETRYABLE.has(sqlStateOf(e))) continue;
        throw e;
      }
    }
  }
}

/** pg returns bigint columns as strings. */
type SqlHoldRow = Omit<HoldRow, "amount" | "settled"> & { ord: string; outcome: HoldOutcome; amount: string | null; settled: string | null };

function sqlStateOf(e: unknown): string {
  return (e as { code?: string }).code ?? "";
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
