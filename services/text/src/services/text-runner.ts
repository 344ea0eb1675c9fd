import { randomUUID } from "node:crypto";
import type { Provider } from "@meter/contracts";
import { writeOutboxMessage } from "@meter/messaging";
import { AppError, type Logger } from "@meter/service-kit";
import { BillingUnreachable, type BillingAdapter } from "../adapters/billing.adapter";
import { UpstreamError, type ProviderResult, type TextProvider } from "../providers/provider";
import type { Database } from "../db";
import type { StoredError, TextPatch, TextRecord, TextRequestRepository, TextResult } from "../repositories/text-request.repository";
import { costOf } from "./pricing";
import { renderError } from "../render/text.render";

export interface RunnerDeps {
  db: Database;
  repo: TextRequestRepository;
  billing: BillingAdapter;
  providerFor: (provider: Provider) => TextProvider;
  logger: Logger;
  workerId: string;
  upstreamTimeoutMs: number;
  /** Wakes the outbox relay after a hand-off was committed. */
  onOutbox: () => void;
  /** Inline retries of an upstream that answered 5xx/429, before giving up (nothing was charged). */
  upstreamRetryDelaysMs?: readonly number[];
  /** First delay of a parked record; it doubles per attempt up to five minutes. */
  parkBaseMs?: number;
}

/** Thrown out of drive() when billing refuses the hold: nothing was reserved and the record is gone. */
export class Refused extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
  }
}

const FINAL = new Set(["completed", "failed"]);

/**
 * Runs of a call whose outcome stayed unknown (dropped, timed out, unreadable) before it counts as
 * failed. With the backoff that is about half an hour of an upstream that never answers properly; the
 * hold is then released (the customer is not charged for an answer never delivered) and the attempt
 * is logged as a possible loss.
 */
export const MAX_UNKNOWN_ATTEMPTS = 10;

/**
 * Drives a text request through its states until it is final, or must wait (billing unreachable,
 * upstream outcome unknown) and is parked for the reconciler:
 *
 *   reserving -> settling -> completed
 *            \-> releasing -> failed
 *
 * `reserving` covers placing the hold and calling the upstream: both are repeated when a record is
 * resumed (placing is idempotent; a call whose outcome is unknown must be made again anyway), so no
 * write is spent between them.
 * Each step is committed before the next is taken, and each money call is idempotent on the hold id,
 * so whichever process resumes a record after a crash repeats at most an idempotent call. An upstream
 * call whose outcome is unknown is never taken as failed: the hold stays and the call is made again.
 */
export class TextRunner {
  private readonly active = new Map<string, Promise<TextRecord>>();
  /** Completed records whose `completed` mark is still being written; a retry is answered from here. */
  private readonly completing = new Map<string, TextRecord>();

  constructor(private readonly deps: RunnerDeps) {}

  /** The final record if this process finished it and is still writing its completion. */
  justCompleted(id: string): TextRecord | undefined {
    return this.completing.get(id);
  }

  isActive(id: string): boolean {
    return this.active.has(id);
  }

  get activeCount(): number {
    return this.active.size;
  }

  /** One drive per record at a time; a second caller shares the first one's outcome. */
  drive(record: TextRecord, opts: { firstAttempt?: boolean } = {}): Promise<TextRecord> {
    const running = this.active.get(record.id);
    if (running) return running;
    const p = this.loop(record, opts.firstAttempt ?? false).finally(() => this.active.delete(record.id));
    this.active.set(record.id, p);
    return p;
  }

  /** Waits for the drives under way (graceful shutdown), up to `ms`. */
  async drain(ms: number): Promise<void> {
    await Promise.race([Promise.allSettled([...this.active.values()]), new Promise((r) => setTimeout(r, ms).unref())]);
  }

  private async loop(start: TextRecord, firstAttempt: boolean): Promise<TextRecord> {
    let r = start;
    for (;;) {
      if (FINAL.has(r.state) || r.nextAttemptAt.getTime() > Date.now()) return r;
      const next = await this.step(r, firstAttempt);
      // Someone else moved the record on (another process took it over): stop, theirs is the truth.
      if (!next) return (await this.deps.repo.find(r.id)) ?? r;
      r = next;
    }
  }

  private step(r: TextRecord, firstAttempt: boolean): Promise<TextRecord | undefined> {
    switch (r.state) {
      case "reserving":
        return this.reserve(r, firstAttempt);
      case "settling":
        return this.settle(r);
      case "releasing":
        return this.release(r);
      default:
        return Promise.resolve(r);
    }
  }

  private async reserve(r: TextRecord, firstAttempt: boolean): Promise<TextRecord | undefined> {
    try {
      const hold = await this.deps.billing.placeHold({
        hold_id: r.holdId,
        key_id: r.keyId,
        amount_microrub: r.estimatedCost,
        operation: "text",
        model: r.model,
        source: "text",
      });
      if (hold.status === "active") return this.execute(r);
      // The hold id was released before it was placed (an earlier attempt gave up on it): that id can
      // never hold money again, so reserve under a fresh one.
      this.deps.logger.warn({ request: r.id, hold: r.holdId, status: hold.status }, "hold not active at placement; reserving under a new id");
      return this.deps.repo.transition(r, { holdId: randomUUID() });
    } catch (e) {
      if (e instanceof AppError) {
        // Refused (balance, budget, revoked key): nothing is reserved, so nothing is kept.
        await this.deps.repo.forget(r);
        throw new Refused(e);
      }
      if (e instanceof BillingUnreachable) {
        if (e.delivery === "not_delivered" && firstAttempt) {
          await this.deps.repo.forget(r);
          throw new Refused(new AppError("service_unavailable", "billing is not reachable right now; nothing was reserved"));
        }
        // The hold may or may not exist: place it again later (idempotent) rather than guess.
        return this.park(r, r.attempts + 1);
      }
      throw e;
    }
  }

  private async execute(r: TextRecord): Promise<TextRecord | undefined> {
    const provider = this.deps.providerFor(r.plan.provider);
    const delays = this.deps.upstreamRetryDelaysMs ?? [250, 1000];
    for (let attempt = 0; ; attempt++) {
      let result: ProviderResult;
      try {
        result = await provider.complete(r.plan.request, { timeoutMs: this.deps.upstreamTimeoutMs });
      } catch (e) {
        const err = e instanceof UpstreamError ? e : new UpstreamError("unknown", String(e), undefined, { cause: e });
        if (err.kind === "failed" && attempt < delays.length) {
          await sleep(delays[attempt]!);
          continue;
        }
        if (err.kind === "unknown" && r.attempts + 1 < MAX_UNKNOWN_ATTEMPTS) {
          // It may have run upstream: keep the hold and run it again later; never take it as failed.
          this.deps.logger.warn({ request: r.id, err, attempt: r.attempts + 1 }, "upstream outcome unknown; will run again");
          return this.park(r, r.attempts + 1);
        }
        if (err.kind === "unknown") {
          this.deps.logger.error({ request: r.id, err, attempts: r.attempts + 1 }, "upstream never answered usably; releasing the hold (possible upstream charge not passed on)");
        }
        // Refused or not reached (or still failing): nothing ran, so nothing is charged.
        return this.deps.repo.transition(r, { state: "releasing", error: upstreamFailure(err, r.requestId) });
      }
      const textResult = toTextResult(r, result);
      const cost = Math.min(costOf(r.plan.tariff, textResult.usage.input_tokens, textResult.usage.output_tokens), r.estimatedCost);
      return this.deps.repo.storeResult(r, textResult, cost);
    }
  }

  private async settle(r: TextRecord): Promise<TextRecord | undefined> {
    const cost = r.cost ?? r.estimatedCost;
    try {
      await this.deps.billing.settle(r.holdId, cost);
    } catch (e) {
      if (e instanceof AppError && e.code === "hold_already_resolved") return this.resolvedElsewhere(r);
      if (e instanceof BillingUnreachable) return this.handOff(r, "billing.hold.settle", { version: "v1", hold_id: r.holdId, amount_microrub: cost });
      throw e;
    }
    // Settled: the answer can go out now; the `completed` mark follows in a batch (see the repository).
    const done: TextRecord = { ...r, state: "completed" };
    this.completing.set(r.id, done);
    this.deps.repo
      .complete(r)
      .catch((e: unknown) => this.deps.logger.warn({ err: e, request: r.id }, "completion mark not written; the reconciler will settle again"))
      .finally(() => this.completing.delete(r.id));
    return done;
  }

  private async release(r: TextRecord): Promise<TextRecord | undefined> {
    try {
      await this.deps.billing.release(r.holdId, "upstream failed; nothing charged");
      return this.deps.repo.transition(r, { state: "failed" });
    } catch (e) {
      if (e instanceof AppError && e.code === "hold_already_resolved") return this.resolvedElsewhere(r);
      if (e instanceof BillingUnreachable) return this.handOff(r, "billing.hold.release", { version: "v1", hold_id: r.holdId, reason: "upstream failed; nothing charged" });
      throw e;
    }
  }

  /**
   * Billing says the hold is already resolved. If it resolved the way we wanted (a hand-off reached it
   * over the bus), we are done; if not (it expired unresolved, a bug), the answer stands and the logs say so.
   */
  private async resolvedElsewhere(r: TextRecord): Promise<TextRecord | undefined> {
    const hold = await this.deps.billing.getHold(r.holdId);
    const wanted = r.state === "settling" ? "settled" : "released";
    if (hold?.status !== wanted) {
      this.deps.logger.error({ request: r.id, hold: r.holdId, status: hold?.status, wanted }, "hold resolved otherwise than this request needed");
    }
    return this.deps.repo.transition(r, { state: r.state === "settling" ? "completed" : "failed" });
  }

  /**
   * Billing is unreachable: write the settlement or release to the outbox once (keyed by the hold, so a
   * second hand-off is a no-op), and check again later. The bus delivers the command when billing is
   * back; our next HTTP attempt then finds the hold resolved.
   */
  private async handOff<K extends "billing.hold.settle" | "billing.hold.release">(
    r: TextRecord,
    routingKey: K,
    payload: Parameters<typeof writeOutboxMessage<K>>[2],
  ): Promise<TextRecord | undefined> {
    await writeOutboxMessage(this.deps.db.prisma, routingKey, payload, { messageId: r.holdId });
    this.deps.onOutbox();
    return this.park(r, r.attempts + 1);
  }

  /** Leaves the record for the reconciler, backing off exponentially up to five minutes. */
  private park(r: TextRecord, attempts: number): Promise<TextRecord | undefined> {
    const delay = Math.min((this.deps.parkBaseMs ?? 1000) * 2 ** Math.min(attempts - 1, 9), 300_000);
    const patch: TextPatch = { attempts, nextAttemptAt: new Date(Date.now() + delay) };
    return this.deps.repo.transition(r, patch);
  }
}

/** The answer a failed upstream call gets: 502, the hold released, the upstream's reason named. */
function upstreamFailure(err: UpstreamError, requestId: string | null): StoredError {
  // An upstream refusing our own credentials is our configuration, not the customer's business.
  const detail =
    err.status === 401 || err.status === 403
      ? `the upstream refused this service's credentials (${err.status})`
      : err.status
        ? `the upstream answered ${err.status}: ${err.message}`
        : err.kind === "unknown"
          ? `the upstream did not answer usably after ${MAX_UNKNOWN_ATTEMPTS} attempts`
          : `the upstream could not be reached: ${err.message}`;
  return renderError("upstream_error", `${detail}; nothing was charged`, requestId ?? undefined);
}

/**
 * The result as charged. Usage the upstream did not report (or reported nonsensically) is estimated
 * from what we know: our conservative input count, and the answer's bytes capped at max tokens.
 */
function toTextResult(r: TextRecord, result: ProviderResult): TextResult {
  const usage = result.usage ?? {
    input_tokens: r.plan.inputTokensEstimate,
    output_tokens: Math.min(Buffer.byteLength(result.text, "utf8"), r.plan.request.maxTokens),
  };
  return { text: result.text, stop_reason: result.stopReason, usage };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
