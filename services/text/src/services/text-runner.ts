import { randomUUID } from "node:crypto";
import type { Hold, Provider } from "@meter/contracts";
import { placementOf, type BillingClient } from "@meter/service-clients";
import type { Allocator } from "@meter/allowances";
import type { AppError, Logger } from "@meter/service-kit";
import type { FinalOutcome, StoredError, TextRecord, TextResult } from "../domain/text-record";
import type { ProviderResult, TextProvider, UpstreamError } from "../providers/provider";
import { UpstreamRouter, type RouterDeps } from "../providers/routing/upstream-router";
import type { TextRequestRepository } from "../repositories/text-request.repository";
import { TextErrors } from "../errors";
import { moveOntoAllowance } from "./allowance-rule";
import { chargeOf } from "./pricing";

export interface RunnerDeps {
  repo: Pick<TextRequestRepository, "finish" | "find" | "update" | "forget" | "moveToAllowance" | "route">;
  billing: Pick<BillingClient, "placeHold" | "release">;
  providerFor: (provider: Provider) => TextProvider;
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

/** Thrown out of drive() when billing refuses the hold: nothing is reserved and the record is gone. */
export class Refused extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
  }
}

/** Back-off caps: billing coming back should finish parked requests within seconds; an upstream gets longer. */
const BILLING_BACKOFF_CAP_MS = 5_000;
const UPSTREAM_BACKOFF_CAP_MS = 300_000;

/**
 * Drives a text request to a final answer:
 *
 *   reserving --(hold placed, upstream answered)--> completed  + billing.hold.settle   (one commit)
 *             --(upstream refused or failed)-------> failed     + billing.hold.release  (one commit)
 *             --(billing refused the hold)---------> forgotten (nothing reserved; the key may be used again)
 *
 * An attempt places the hold (idempotent on its id) and calls the upstream once. Whatever goes wrong
 * in it, of whatever kind, ends the attempt: the record is parked with a back-off and taken up again
 * by the reconciler, which starts the next attempt. Attempts are counted in the record before the
 * upstream is called (the claim writes 1, each take-over adds one), so a paid upstream is called at
 * most `maxAttempts` times, however the attempts end; then the request fails and its hold is released.
 * An answer that was received but could not be stored is kept in memory, so a later attempt in this
 * process stores it instead of paying for it again.
 */
export class TextRunner {
  private readonly active = new Map<string, Promise<TextRecord>>();
  private readonly answered = new Map<string, { result: TextResult; cost: number; upstreamMs?: number }>();

  private readonly router: UpstreamRouter;

  constructor(private readonly deps: RunnerDeps) {
    this.router = new UpstreamRouter({
      providerFor: deps.providerFor,
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

    // A hold placed on an allowance is in this database already, committed with the claim.
    if (r.allowanceId === null) {
      const placed = await placementOf(placement ?? this.place(r));
      switch (placed.kind) {
        case "id_used_up":
          return this.reserveAnew(r, placed.why);
        case "refused":
          return this.refuse(r, placed.error);
        case "unreachable":
          // Never delivered on the first attempt: nothing can be held, so the client may simply be told.
          if (placed.error.delivery === "not_delivered" && r.attempts === 1) return this.refuse(r, TextErrors.billingUnavailable());
          return this.park(r, BILLING_BACKOFF_CAP_MS);
        case "held":
          break;
      }
    }

    const calledAt = performance.now();
    const sent = await this.router.send(r.plan, r.provider, {
      timeoutMs: this.deps.upstreamTimeoutMs,
      pin: (provider, refused) => this.deps.repo.route(r, provider, refused),
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
        return this.finish(failure(r, upstreamError(describeFailure(sent.error)), "upstream failed"));
      case "answered":
        break;
    }
    const answer = sent.answer;
    const result = toTextResult(r, answer);
    const cost = chargeOf(r.plan.tariff, result.usage.input_tokens, result.usage.output_tokens, r.estimatedCost);
    const upstreamMs = performance.now() - calledAt;
    this.answered.set(r.id, { result, cost, upstreamMs });
    return this.finish({ record: r, state: "completed", result, cost, upstreamMs });
  }

  /**
   * Out of attempts: the request fails and its hold is released, so no money stays locked. An answer
   * we hold but could not store is tried once more; the customer is not charged for one never delivered.
   */
  private async giveUp(r: TextRecord, kept: { result: TextResult; cost: number; upstreamMs?: number } | undefined): Promise<TextRecord> {
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

  private place(r: TextRecord): Promise<Hold> {
    return this.deps.billing.placeHold({
      hold_id: r.holdId,
      key_id: r.keyId,
      amount_microrub: r.estimatedCost,
      operation: "text",
      model: r.model,
      source: "text",
      owner_ref: r.id,
    });
  }

  /** Commits the final outcome with its hold command; the relay takes the command to billing. */
  private async finish(outcome: FinalOutcome): Promise<TextRecord> {
    const r = outcome.record;
    const done = await this.deps.repo.finish(outcome);
    this.answered.delete(r.id);
    if (!done) return (await this.deps.repo.find(r.id)) ?? r;
    this.deps.onOutbox();
    return outcome.state === "completed"
      ? { ...r, state: "completed", result: outcome.result, cost: outcome.cost }
      : { ...r, state: "failed", error: outcome.error };
  }

  /**
   * Billing refused the hold (balance, budget, revoked key): nothing is reserved and the record is
   * forgotten, so the key can be used again. If an earlier attempt's placement had an unknown outcome,
   * it could still land later; its id is released first (a tombstone), so it never can.
   */
  private async refuse(r: TextRecord, error: AppError): Promise<TextRecord> {
    const moved = await moveOntoAllowance(this.deps.allowances, this.deps.repo, this.deps.logger, r);
    if (moved === "unknown") return this.park(r, BILLING_BACKOFF_CAP_MS);
    if (moved) return this.run(moved, undefined);
    if (r.attempts > 1 || r.holdId !== r.id) {
      try {
        await this.deps.billing.release(r.holdId, "refused; nothing reserved");
      } catch (e) {
        // Not yet safe to forget: the next attempt places (and is refused, or held) again.
        this.deps.logger.warn({ err: e, request: r.id }, "could not release a refused request's hold id; parked");
        return this.park(r, BILLING_BACKOFF_CAP_MS);
      }
    }
    await this.deps.repo.forget(r);
    throw new Refused(error);
  }

  /** Moves the record to a fresh hold id and places that one, within the same attempt. */
  private async reserveAnew(r: TextRecord, why: string): Promise<TextRecord> {
    this.deps.logger.warn({ request: r.id, hold: r.holdId }, `${why}; reserving under a new hold id`);
    if (r.holdId === r.id) await this.deps.billing.release(r.holdId, "replaced by a new hold id").catch(() => undefined);
    const moved = await this.deps.repo.update(r, { holdId: randomUUID() });
    if (!moved) return this.current(r);
    return this.run(moved, undefined);
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

function failure(r: TextRecord, error: StoredError, releaseReason: string): FinalOutcome {
  return { record: r, state: "failed", error, releaseReason: `${releaseReason}; nothing charged` };
}

/** A failed upstream call as the client sees it: what kind of failure, never the upstream's own words. */
function upstreamError(detail: string): StoredError {
  return { code: "upstream_error", message: `${detail}; nothing was charged` };
}

function describeFailure(err: UpstreamError): string {
  // An upstream refusing our own credentials is our configuration, not the customer's business.
  if (err.status === 401 || err.status === 403) return "the upstream refused this service's credentials";
  if (err.status) return `the upstream answered ${err.status}`;
  return "the upstream could not be reached";
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
