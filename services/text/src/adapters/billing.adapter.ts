import { Hold, type PlaceHoldRequest } from "@meter/contracts";
import { AppError, InternalCallError, InternalHttpError, type InternalClient } from "@meter/service-kit";
import type { ErrorCode } from "@meter/contracts";

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

/** Holds, through billing-ledger's internal API. */
export class BillingAdapter {
  constructor(
    private readonly client: InternalClient,
    private readonly timeoutMs = 10_000,
  ) {}

  /** Resolves with the hold (possibly not active: a release got there first); refusals throw AppError. */
  async placeHold(req: PlaceHoldRequest): Promise<Hold> {
    return this.call("POST", "/internal/v1/holds", req);
  }

  async settle(holdId: string, amount: number): Promise<Hold> {
    return this.call("POST", `/internal/v1/holds/${holdId}/settle`, { amount_microrub: amount });
  }

  async release(holdId: string, reason: string): Promise<Hold> {
    return this.call("POST", `/internal/v1/holds/${holdId}/release`, { reason });
  }

  async getHold(holdId: string): Promise<Hold | undefined> {
    try {
      return await this.call("GET", `/internal/v1/holds/${holdId}`);
    } catch (e) {
      if (e instanceof AppError && e.code === "not_found") return undefined;
      throw e;
    }
  }

  private async call(method: "GET" | "POST", path: string, body?: unknown): Promise<Hold> {
    try {
      const res = await this.client.call(method, path, body, { timeoutMs: this.timeoutMs });
      return Hold.parse(res.body);
    } catch (e) {
      if (e instanceof InternalCallError) throw new BillingUnreachable(e.delivery, { cause: e });
      if (e instanceof InternalHttpError) {
        // A 5xx may come from a proxy after billing acted: its outcome is not known.
        if (e.status >= 500) throw new BillingUnreachable("unknown", { cause: e });
        throw new AppError(e.code as ErrorCode, e.message, { cause: e });
      }
      throw e;
    }
  }
}
