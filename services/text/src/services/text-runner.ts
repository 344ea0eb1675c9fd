import type { Hold, Provider } from "@meter/contracts";
import { HoldReservation, Refused } from "@meter/hold-client";
import type { BillingClient } from "@meter/service-clients";
import type { Allocator } from "@meter/allowances";
import type { AppError, Logger } from "@meter/service-kit";
import { moveOntoAllowance } from "../domain/allowance-rule";
import { withHoldCommand } from "../domain/final-command";
import type { FinalOutcome, NewTextRecord, StoredError, TextRecord, TextResult } from "../domain/text-record";
import { describeUpstreamFailure, UpstreamRouter, type ChatProvider, type ChatResult, type Route, type RouterDeps } from "@meter/upstreams";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import { TextErrors } from "../errors";
import { chargeOf } from "./pricing";

export interface RunnerDeps {
  repo: Pick<TextRequestRepository, "finish" | "find" | "update" | "moveHold" | "forget" | "moveToAllowance" | "route">;
  billing: Pick<BillingClient, "placeHold" | "release">;
  providerFor: (provider: Provider) => ChatProvider;
  logger: Logger;
  upstreamTimeoutMs: number;
  /** Wakes the outbox relay after a final outcome (and its hold command) was committed. */
  onOutbox: () => void;
  /** Attempts a request may start, each calling each of its providers at most once, before it ends as failed. */
  maxAttempts: number;
  /** Inline retries of a model's only upstream answering 5xx/429 within one attempt (nothing was charged). */
  upstreamRetryDelaysMs: readonly number[];
  /** First back-off of a parked record; it doubles per attempt (see park()). */
  parkBaseMs: number;
  /** The providers' shared health and per-provider metrics (models with several providers). */
  routing?: Pick<RouterDeps, "health" | "metrics">;
  /** This process's allowances (none when ALLOWANCES=off): a refused hold moves onto one with room. */
  allowances?: Pick<Allocator, "takeIfRoom" | "giveBack" | "whenGranted">;
}

/** Back-off caps: billing coming back should finish parked requests within seconds; an upstream gets longer. */
const BILLING_BACKOFF_CAP_MS = 5_000;
const UPSTREAM_BACKOFF_CAP_MS = 300_000;

/**
 * Drives a text request to a final answer:
 *
 *   reserving --(hold placed, upstream answered)--> completed  + billing.hold.settle   (one commit)
 *             --(upstream refused or failed)-------> failed     + billing.hold.release  (one commit)
 *             --(billing refused the hold)---------> as @meter/hold-client's HoldReservation says: forgotten on
 *                                                    the request's own attempt, failed on a later one
 *
 * An attempt places the hold (idempotent on its id; HoldReservation) and calls the upstream once. Whatever goes wrong
 * in it, of whatever kind, ends the attempt: the record is parked with a back-off and taken up again
 * by the reconciler, which starts the next attempt. Attempts are counted in the record before the
 * upstream is called (the claim writes 1, each take-over adds one), so a paid upstream is called at
 * most `maxAttempts` times, however the attempts end; then the request fails and its hold is released.
 * An answer that was received but could not be stored is kept in memory, so a later attempt in this
 * process stores it instead of paying for it again.
 */
export class TextRunner {
  private readonly active = new Map<string, Promise<TextRecord>>();
  private readonly answered = new Map<string, Kept>();

  private readonly router: UpstreamRouter;
  private readonly reservation: HoldReservation<TextRecord>;

  constructor(private readonly deps: RunnerDeps) {
    const { allowances } = deps;
    this.reservation = new HoldReservation<TextRecord>({
      source: "text",
      billing: deps.billing,
      logger: deps.logger,
      unavailable: () => TextErrors.billingUnavailable(),
      store: deps.repo,
      fail: async (r, refusal) => ((await this.commit(refusedOutcome(r, refusal))) ? { ...r, state: "failed", error: refusedError(refusal) } : undefined),
      ...(allowances ? { divert: (r: TextRecord) => moveOntoAllowance(allowances, deps.repo, deps.logger, r) } : {}),
    });
    this.router = new UpstreamRouter({
      retryDelaysMs: deps.upstreamRetryDelaysMs,
      logger: deps.logger,
      ...(deps.routing ?? {}),
    });
  }

  isActive(id: string): boolean {
    return this.active.has(id);
  }

  get activeCount(): number {
    return this.active.size;
  }

  /**
   * One attempt on a record this process owns; a second caller shares the first one's outcome.
   * Resolves with the record final or parked; rejects with Refused when billing refused the hold.
   * `placement` is the hold placement the request path started alongside the claim.
   */
  drive(record: TextRecord, opts: { placement?: Promise<Hold> } = {}): Promise<TextRecord> {
    const running = this.active.get(record.id);
    if (running) return running;
    const p = this.attempt(record, opts.placement).finally(() => this.active.delete(record.id));
    this.active.set(record.id, p);
    return p;
  }

  /** Waits for the attempts under way (graceful shutdown), up to `ms`. */
  async drain(ms: number): Promise<void> {
    await Promise.race([Promise.allSettled([...this.active.values()]), new Promise((r) => setTimeout(r, ms).unref())]);
  }

  private async attempt(r: TextRecord, placement: Promise<Hold> | undefined): Promise<TextRecord> {
    try {
      return await this.run(r, placement);
    } catch (e) {
      if (e instanceof Refused) throw e;
      this.deps.logger.error({ err: e, request: r.id, attempt: r.attempts }, "text attempt failed; parked for the next attempt");
      return this.park(r, UPSTREAM_BACKOFF_CAP_MS);
    }
  }

  private async run(r: TextRecord, placement: Promise<Hold> | undefined): Promise<TextRecord> {
    const kept = this.answered.get(r.id);
    if (r.attempts > this.deps.maxAttempts) return this.giveUp(r, kept);
    if (kept) return this.finish({ record: r, state: "completed", ...kept });

    // A hold placed on an allowance is in this database already, committed with the claim (the
    // allowance's signature covers it); a per-request hold's signature goes with the final outcome.
    let grantSignature: string | undefined;
    if (r.allowanceId === null) {
      const reserved = await this.reservation.reserve(r, placement);
      switch (reserved.kind) {
        case "pending":
          return this.park(reserved.record, BILLING_BACKOFF_CAP_MS);
        case "final":
        case "moved":
          return reserved.record;
        case "held":
          r = reserved.record;
          grantSignature = reserved.hold?.grant_signature;
          break;
      }
    }

    const calledAt = performance.now();
    const { plan } = r;
    const sent = await this.router.send(routeOf(plan), r.provider, {
      timeoutMs: this.deps.upstreamTimeoutMs,
      pin: (provider, refused) => this.deps.repo.route(r, provider, refused),
      // A model with several providers names its model per provider; its only provider's is in the plan.
      call: (provider, timeoutMs) =>
        this.deps
          .providerFor(provider)
          .complete(plan.providers ? { ...plan.request, model: provider.upstream_model ?? plan.model } : plan.request, { timeoutMs }),
      usedTokens: (answer) => (answer.usage ? answer.usage.input_tokens + answer.usage.output_tokens : undefined),
    });
    switch (sent.kind) {
      case "moved":
        return this.current(r);
      case "unknown":
        // It may have run upstream: keep the hold, and try again in a later (counted) attempt, on the same provider.
        this.deps.logger.warn({ request: r.id, err: sent.error, provider: sent.provider, attempt: r.attempts }, "upstream outcome unknown; will try again");
        return this.park(r, UPSTREAM_BACKOFF_CAP_MS);
      case "failed":
        // Refused, not reached, or still failing: nothing ran, so nothing is charged.
        this.deps.logger.warn({ request: r.id, err: sent.error, refused: sent.refused }, "upstream call failed; releasing the hold");
        if (r.plan.providers && sent.refused.length > 0) await this.deps.repo.route(r, sent.refused.at(-1)!, sent.refused);
        return this.finish({ ...failure(r, upstreamError(describeUpstreamFailure(sent.error)), "upstream failed"), grantSignature });
      case "answered":
        break;
    }
    const answer = sent.answer;
    const result = toTextResult(r, answer);
    const cost = chargeOf(r.plan.tariff, result.usage.input_tokens, result.usage.output_tokens, r.estimatedCost);
    const upstreamMs = performance.now() - calledAt;
    this.answered.set(r.id, { result, cost, upstreamMs, grantSignature });
    return this.finish({ record: r, state: "completed", result, cost, upstreamMs, grantSignature });
  }

  /**
   * Out of attempts: the request fails and its hold is released, so no money stays locked. An answer
   * we hold but could not store is tried once more; the customer is not charged for one never delivered.
   */
  private async giveUp(r: TextRecord, kept: Kept | undefined): Promise<TextRecord> {
    if (kept) {
      try {
        return await this.finish({ record: r, state: "completed", ...kept });
      } catch (e) {
        this.deps.logger.error({ err: e, request: r.id }, "an upstream answer could not be stored in any attempt; releasing the hold");
        this.answered.delete(r.id);
        return this.finish(failure(r, { code: "upstream_error", message: "the answer could not be stored; nothing was charged" }, "answer not stored"));
      }
    }
    return this.finish(failure(r, upstreamError(`the upstream did not answer usably in ${this.deps.maxAttempts} attempts`), "gave up"));
  }

  /** The placement of the record's own hold, which the request path starts alongside its claim. */
  place(r: NewTextRecord): Promise<Hold> {
    return this.reservation.place(r);
  }

  /** Commits the final outcome with its hold command; the record as it now is. */
  private async finish(outcome: FinalOutcome): Promise<TextRecord> {
    const r = outcome.record;
    if (!(await this.commit(outcome))) return this.current(r);
    return outcome.state === "completed"
      ? { ...r, state: "completed", result: outcome.result, cost: outcome.cost }
      : { ...r, state: "failed", error: outcome.error };
  }

  /** The outcome and its hold command in one commit; the relay takes the command to billing. False: the record moved on. */
  private async commit(outcome: FinalOutcome): Promise<boolean> {
    const done = await this.deps.repo.finish(withHoldCommand(outcome));
    this.answered.delete(outcome.record.id);
    if (done) this.deps.onOutbox();
    return done;
  }

  /**
   * Leaves the record for its next attempt, backing off exponentially (capped). The reconciler takes
   * it up when its time comes. A record that cannot even be parked (database down) keeps its lease
   * and is taken up when that runs out.
   */
  private async park(r: TextRecord, capMs: number): Promise<TextRecord> {
    const delay = Math.min(this.deps.parkBaseMs * 2 ** Math.min(r.attempts - 1, 20), capMs);
    const parked = await this.deps.repo.update(r, { nextAttemptAt: new Date(Date.now() + delay) });
    return parked ?? this.current(r);
  }

  /** The record as it now is, after it moved on under us (another owner finished it, or it is gone). */
  private async current(r: TextRecord): Promise<TextRecord> {
    return (await this.deps.repo.find(r.id)) ?? r;
  }
}

/** A plan's providers as routed, and its estimate as counted against a provider's tpm cap. */
function routeOf(plan: TextRecord["plan"]): Route {
  return { providers: plan.providers ?? [plan.provider], tokens: plan.inputTokensEstimate + plan.request.maxTokens };
}

/** An upstream answer received but not yet stored, with the signature of the placement it was paid under. */
interface Kept {
  result: TextResult;
  cost: number;
  upstreamMs?: number;
  grantSignature?: string | undefined;
}

function failure(r: TextRecord, error: StoredError, releaseReason: string): FinalOutcome {
  return { record: r, state: "failed", error, releaseReason: `${releaseReason}; nothing charged` };
}

/** Billing refused the hold at a later attempt: the request's final answer is billing's refusal. */
function refusedOutcome(r: TextRecord, refusal: AppError): FinalOutcome {
  return failure(r, refusedError(refusal), `hold refused (${refusal.code})`);
}

function refusedError(refusal: AppError): StoredError {
  return { code: refusal.code, message: `${refusal.message}; nothing was charged` };
}

/** A failed upstream call as the client sees it: what kind of failure, never the upstream's own words. */
function upstreamError(detail: string): StoredError {
  return { code: "upstream_error", message: `${detail}; nothing was charged` };
}

/**
 * The result as charged. Usage the upstream did not report (or reported nonsensically) is estimated
 * from what we know: our conservative input count, and the answer's bytes capped at max tokens.
 */
function toTextResult(r: TextRecord, result: ChatResult): TextResult {
  const usage = result.usage ?? {
    input_tokens: r.plan.inputTokensEstimate,
    output_tokens: Math.min(Buffer.byteLength(result.text, "utf8"), r.plan.request.maxTokens),
  };
  return { text: result.text, stop_reason: result.stopReason, usage };
}
