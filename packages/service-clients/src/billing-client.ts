import {
  BillingEndpoints,
  type Catalog,
  type ErrorCode,
  type GrantAllowanceRequest,
  type Hold,
  type HoldOp,
  type HoldOpResult,
  type KeyIdentity,
  type PlaceHoldRequest,
} from "@meter/contracts";
import { AppError, Batcher, InternalCallError, InternalHttpError, type Delivery, type InternalClient } from "@meter/service-kit";

/** No answer could be had from billing: it may or may not have acted (`unknown`), or certainly did not. */
export class BillingUnreachable extends Error {
  constructor(
    readonly delivery: Delivery,
    options?: { cause?: unknown },
  ) {
    super(`billing-ledger unreachable (${delivery})`, options);
    this.name = "BillingUnreachable";
  }
}

/**
 * billing-ledger's internal API. Hold operations of concurrent requests travel together in one
 * `hold-ops` call (one round trip, one transaction there); a lone operation goes at once. Billing's
 * refusals come back as AppError with its code; a call that got no answer as BillingUnreachable.
 */
/** A key's holder as verification answers it: until `expires_at` (ISO 8601), when the key has one. */
export type VerifiedKey = KeyIdentity & { expires_at?: string };

export class BillingClient {
  private readonly holdOps: Batcher<HoldOp, Hold>;

  constructor(
    private readonly client: InternalClient,
    private readonly timeoutMs = 10_000,
  ) {
    this.holdOps = new Batcher((ops) => this.sendHoldOps(ops), {
      maxBatch: 200,
      // One call in flight: the operations of every request arriving meanwhile ride in the next one,
      // so billing commits once for many (measured: about 30 % more paid requests per second at
      // concurrency 16 than with four calls in flight). A lock wait inside billing is bounded by its
      // HOLD_LOCK_TIMEOUT_MS and refuses only the locked operation.
      concurrency: 1,
      // Billing applies a batch in one transaction: a refusal means none of it happened, so its items may
      // go again alone. A batch that got no answer may have been applied: each of its operations is
      // "unknown", never the "not delivered" a second try could see once billing has gone away.
      splitFailedBatch: (e) => !(e instanceof BillingUnreachable),
    });
  }

  /** Resolves with the hold, which may not be active: a release of its id got there first. */
  placeHold(req: PlaceHoldRequest): Promise<Hold> {
    return this.holdOps.submit({ op: "place", ...req });
  }

  settle(holdId: string, amount: number, organizationId?: string): Promise<Hold> {
    return this.holdOps.submit({ op: "settle", hold_id: holdId, amount_microrub: amount, ...orgOf(organizationId) });
  }

  /** With the organization of the hold's key: a release of an id billing never saw is recorded under it (without one, such a release is not found). */
  release(holdId: string, reason: string, organizationId?: string): Promise<Hold> {
    return this.holdOps.submit({ op: "release", hold_id: holdId, reason, ...orgOf(organizationId) });
  }

  /** A settle or release as its command on the bus says it (a request on an allowance, an allowance's close). */
  resolve(op: Extract<HoldOp, { op: "settle" | "release" }>): Promise<Hold> {
    return this.holdOps.submit(op);
  }

  /**
   * Asks billing for an allowance (docs/api.md, "Allowances"); idempotent on its hold_id. Resolves with
   * the allowance's hold (`usable_until` the end of its budget day); a refusal is an AppError.
   */
  grant(req: GrantAllowanceRequest): Promise<Hold> {
    return this.holdOps.submit({ op: "grant", ...req });
  }

  /** The key's holder (with its expires_at, when it has one), or null for a key that is unknown, revoked or expired. */
  async verifyKey(key: string): Promise<VerifiedKey | null> {
    try {
      const answer = await this.client.send(BillingEndpoints.verifyKey, { body: { key } }, { timeoutMs: 5_000 });
      return answer.expires_at ? { ...answer.identity, expires_at: answer.expires_at } : answer.identity;
    } catch (e) {
      if (e instanceof InternalHttpError && e.status === 401) return null;
      throw unreachableOr(e);
    }
  }

  async catalog(): Promise<Catalog> {
    try {
      return await this.client.send(BillingEndpoints.catalog, {}, { timeoutMs: 5_000 });
    } catch (e) {
      throw unreachableOr(e);
    }
  }

  private async sendHoldOps(ops: HoldOp[]): Promise<(Hold | Error)[]> {
    let results;
    try {
      ({ results } = await this.client.send(BillingEndpoints.holdOps, { body: { ops } }, { timeoutMs: this.timeoutMs }));
    } catch (e) {
      throw unreachableOr(e);
    }
    return results.map((r) => (r.ok ? r.hold : refusalOf(r.error)));
  }
}

/**
 * Billing's refusal of one op. A refusal that money parked in allowances caused says when it may
 * succeed: it is answered with that Retry-After (docs/api.md, "Allowances").
 */
function refusalOf(error: Extract<HoldOpResult, { ok: false }>["error"]): AppError {
  const headers = error.retry_after_seconds === undefined ? undefined : { "retry-after": String(error.retry_after_seconds) };
  return new AppError(error.code as ErrorCode, error.message, { headers });
}

/** Statuses that blame the call itself, which this service built: 400 (its body), 401 and 403 (its identity). */
const OWN_FAULT = new Set([400, 401, 403]);

function unreachableOr(e: unknown): unknown {
  if (e instanceof InternalCallError) return new BillingUnreachable(e.delivery, { cause: e });
  // A 5xx may come from a proxy after billing acted: its outcome is not known.
  if (e instanceof InternalHttpError && e.status >= 500) return new BillingUnreachable("unknown", { cause: e });
  // Billing found this service's own call malformed: the client did nothing wrong, so its text stays in the log.
  if (e instanceof InternalHttpError && OWN_FAULT.has(e.status)) return e;
  if (e instanceof InternalHttpError) return new AppError(e.code as ErrorCode, e.message, { cause: e });
  return e;
}

function orgOf(organizationId: string | undefined): { organization_id?: string } {
  return organizationId === undefined ? {} : { organization_id: organizationId };
}
