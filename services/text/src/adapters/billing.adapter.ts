import { Hold, HoldOpsResponse, type ErrorCode, type HoldOp, type PlaceHoldRequest } from "@meter/contracts";
import { AppError, Batcher, InternalCallError, InternalHttpError, type InternalClient } from "@meter/service-kit";

/** The answer could not be had: billing may or may not have acted (`unknown`) or certainly did not. */
export class BillingUnreachable extends Error {
  constructor(
    readonly delivery: "not_delivered" | "unknown",
    options?: { cause?: unknown },
  ) {
    super(`billing-ledger unreachable (${delivery})`, options);
    this.name = "BillingUnreachable";
  }
}

/**
 * Holds, through billing-ledger's internal API. Placements, settlements and releases of concurrent
 * requests travel together in one `/internal/v1/hold-ops` call (and one transaction there); a lone
 * operation goes at once. Billing's refusals come back as AppError with its code.
 */
export class BillingAdapter {
  private readonly batcher: Batcher<HoldOp, Hold>;

  constructor(
    private readonly client: InternalClient,
    private readonly timeoutMs = 10_000,
  ) {
    this.batcher = new Batcher((ops) => this.send(ops), { maxBatch: 200, concurrency: 4 });
  }

  /** Resolves with the hold (possibly not active: a release got there first). */
  placeHold(req: PlaceHoldRequest): Promise<Hold> {
    return this.batcher.submit({ op: "place", ...req });
  }

  settle(holdId: string, amount: number): Promise<Hold> {
    return this.batcher.submit({ op: "settle", hold_id: holdId, amount_microrub: amount });
  }

  release(holdId: string, reason: string): Promise<Hold> {
    return this.batcher.submit({ op: "release", hold_id: holdId, reason });
  }

  async getHold(holdId: string): Promise<Hold | undefined> {
    try {
      const res = await this.client.call("GET", `/internal/v1/holds/${holdId}`, undefined, { timeoutMs: this.timeoutMs });
      return Hold.parse(res.body);
    } catch (e) {
      if (e instanceof InternalHttpError && e.status === 404) return undefined;
      throw unreachableOr(e);
    }
  }

  private async send(ops: HoldOp[]): Promise<(Hold | Error)[]> {
    let body: unknown;
    try {
      body = (await this.client.call("POST", "/internal/v1/hold-ops", { ops }, { timeoutMs: this.timeoutMs })).body;
    } catch (e) {
      throw unreachableOr(e);
    }
    const { results } = HoldOpsResponse.parse(body);
    return results.map((r) => (r.ok ? r.hold : new AppError(r.error.code as ErrorCode, r.error.message)));
  }
}

function unreachableOr(e: unknown): unknown {
  if (e instanceof InternalCallError) return new BillingUnreachable(e.delivery, { cause: e });
  // A 5xx may come from a proxy after billing acted: its outcome is not known.
  if (e instanceof InternalHttpError && e.status >= 500) return new BillingUnreachable("unknown", { cause: e });
  if (e instanceof InternalHttpError) return new AppError(e.code as ErrorCode, e.message, { cause: e });
  return e;
}
