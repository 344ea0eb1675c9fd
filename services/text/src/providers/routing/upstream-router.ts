import { providerIdOf, type Provider, type RoutedProvider } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { TextPlan } from "../../domain/text-record";
import { UpstreamError, type ProviderResult, type TextProvider } from "../provider";

/**
 * The providers' shared health (a circuit breaker per provider, provider-health.ts). `usable` says which
 * of the given providers may be called now; the others are passed over (an earlier attempt's provider
 * excepted: the request goes nowhere else).
 */
export interface ProviderHealth {
  usable(ids: readonly string[]): Promise<Set<string>>;
  /**
   * Counts a call to a provider with an `rpm` or `tpm` cap, and `tokens` (its estimate) against `tpm`;
   * undefined when this minute's calls or tokens would pass a cap. `minute`: the one it was counted in
   * (null when it could not be counted).
   */
  admit(id: string, caps: Caps, tokens: number): Promise<{ minute: Date | null } | undefined>;
  /** Corrects a counted estimate (`delta` tokens: the usage less the estimate, or minus it when nothing ran). */
  countTokens(id: string, minute: Date, delta: number): Promise<void>;
  failed(id: string, retryAfterMs: number | undefined): Promise<void>;
  succeeded(id: string): Promise<void>;
}

/** A provider's per-minute caps (catalog `rpm`, `tpm`), shared by every replica. */
export interface Caps {
  rpm?: number | undefined;
  tpm?: number | undefined;
}

/** How a request's call upstream ended, over however many providers it took. */
export type RouteOutcome =
  /** `provider` answered; `refused` are the ones that refused before it. */
  | { kind: "answered"; answer: ProviderResult; provider: string; refused: string[] }
  /** Sent to `provider` and no answer came: it may have run there, so it is asked nobody else. */
  | { kind: "unknown"; provider: string; error: UpstreamError; refused: string[] }
  /** Nothing ran anywhere: every provider refused (or one refused in a way another would too). */
  | { kind: "failed"; error: UpstreamError; refused: string[] }
  /** The record moved on while its provider was being recorded: nothing was sent. */
  | { kind: "moved" };

export interface RouterDeps {
  providerFor: (provider: Provider) => TextProvider;
  /** Inline retries of a model's only provider answering 5xx/429 (nothing was charged). */
  retryDelaysMs: readonly number[];
  logger: Logger;
  health?: ProviderHealth;
  /**
   * Per provider: calls by outcome (answered, the failure's kind, or capped: not sent), failures by
   * kind, and the calls' duration.
   */
  metrics?: {
    calls: { inc(labels: { provider: string; outcome: string }): void };
    failures: { inc(labels: { provider: string; kind: string }): void };
    seconds: { observe(labels: { provider: string }, seconds: number): void };
  };
  random?: () => number;
}

interface Target {
  id: string;
  provider: RoutedProvider;
}

/**
 * Sends a request to its model's providers (docs/api.md, "Several providers per model"): by priority,
 * spread by weight among equals, on to the next only when nothing ran on the one before (not sent,
 * 408/429/5xx), each at most once. A model with one provider is called as it always was: no health,
 * no record of the provider, inline retries.
 */
export class UpstreamRouter {
  private readonly random: () => number;

  constructor(private readonly deps: RouterDeps) {
    this.random = deps.random ?? Math.random;
  }

  /**
   * `pinned`: the provider an earlier attempt sent the request to, the only one it may go to now.
   * `pin` records the provider on the request before it is sent there (false: the record moved on).
   */
  async send(
    plan: TextPlan,
    pinned: string | null | undefined,
    opts: { timeoutMs: number; pin: (provider: string, refused: readonly string[]) => Promise<boolean> },
  ): Promise<RouteOutcome> {
    const listed: RoutedProvider[] = plan.providers ?? [plan.provider];
    const all = listed.map((provider) => ({ id: providerIdOf(provider), provider }));
    if (all.length === 1) return this.sendAlone(plan, all[0]!, opts.timeoutMs);
    const previous = pinned ? all.find((t) => t.id === pinned) : undefined;
    const route = previous ? [previous] : await this.order(all);
    const refused: string[] = [];
    let last: UpstreamError | undefined;
    for (const target of route) {
      const counted = previous ? { admitted: true as const } : await this.admit(plan, target);
      // At its cap: passed over like a refusal, but not a failure of its health (it was never asked).
      if (!counted.admitted) {
        this.deps.metrics?.calls.inc({ provider: target.id, outcome: "capped" });
        continue;
      }
      if (target.id !== pinned && !(await opts.pin(target.id, refused))) {
        this.uncount(target, counted, 0);
        return { kind: "moved" };
      }
      pinned = target.id;
      const called = await this.call(plan, target, opts.timeoutMs);
      if (!(called instanceof UpstreamError)) {
        this.uncount(target, counted, usageTotal(called, plan));
        await this.deps.health?.succeeded(target.id);
        if (refused.length) this.deps.logger.info({ provider: target.id, refused }, "answered after other providers refused");
        return { kind: "answered", answer: called, provider: target.id, refused };
      }
      // Nothing ran there (the unknown outcome excepted): its tokens were not spent.
      if (called.kind !== "unknown") this.uncount(target, counted, 0);
      if (called.kind !== "rejected") await this.deps.health?.failed(target.id, called.retryAfterMs);
      if (called.kind === "unknown") return { kind: "unknown", provider: target.id, error: called, refused };
      // A 4xx other than 408/429 is about the request itself: another provider would refuse it too.
      if (called.kind === "rejected") return { kind: "failed", error: called, refused: [...refused, target.id] };
      this.deps.logger.warn({ provider: target.id, err: called }, "provider refused; trying the next one");
      refused.push(target.id);
      last = called;
    }
    return { kind: "failed", error: last ?? new UpstreamError("not_sent", "every provider is cooling down or at its rpm or tpm cap"), refused };
  }

  /**
   * Counts the call against its provider's caps, shared by every replica: admitted, with the tokens
   * counted (its estimate: input plus max_tokens) when the provider has a `tpm` cap.
   */
  private async admit(plan: TextPlan, target: Target): Promise<{ admitted: false } | { admitted: true; minute?: Date; tokens?: number }> {
    const { rpm, tpm } = target.provider;
    if ((rpm === undefined && tpm === undefined) || !this.deps.health) return { admitted: true };
    const tokens = tpm === undefined ? 0 : plan.inputTokensEstimate + plan.request.maxTokens;
    const admission = await this.deps.health.admit(target.id, { rpm, tpm }, tokens);
    if (!admission) return { admitted: false };
    return admission.minute && tokens > 0 ? { admitted: true, minute: admission.minute, tokens } : { admitted: true };
  }

  /** Puts a counted estimate right: the tokens `used` instead (0 when nothing ran). Off the request's path. */
  private uncount(target: Target, counted: { minute?: Date; tokens?: number }, used: number): void {
    if (!counted.minute || counted.tokens === undefined) return;
    // Never above the estimate: input is estimated high and output is capped at max_tokens; an absurd report is not counted.
    const delta = Math.min(used, counted.tokens) - counted.tokens;
    if (delta !== 0) void this.deps.health?.countTokens(target.id, counted.minute, delta);
  }

  /** A model's only provider, as before there were several: retried inline while it answers 5xx/429. */
  private async sendAlone(plan: TextPlan, target: Target, timeoutMs: number): Promise<RouteOutcome> {
    for (let retry = 0; ; retry++) {
      const called = await this.call(plan, target, timeoutMs);
      if (!(called instanceof UpstreamError)) return { kind: "answered", answer: called, provider: target.id, refused: [] };
      if (called.kind === "failed" && retry < this.deps.retryDelaysMs.length) {
        await sleep(this.deps.retryDelaysMs[retry]!);
        continue;
      }
      if (called.kind === "unknown") return { kind: "unknown", provider: target.id, error: called, refused: [] };
      return { kind: "failed", error: called, refused: [target.id] };
    }
  }

  /** One call, timed and counted per provider; its failure returned, not thrown. */
  private async call(plan: TextPlan, target: Target, timeoutMs: number): Promise<ProviderResult | UpstreamError> {
    const started = performance.now();
    const request = plan.providers ? { ...plan.request, model: target.provider.upstream_model ?? plan.model } : plan.request;
    try {
      const answer = await this.deps.providerFor(target.provider).complete(request, { timeoutMs });
      this.deps.metrics?.calls.inc({ provider: target.id, outcome: "answered" });
      return answer;
    } catch (e) {
      const err = e instanceof UpstreamError ? e : new UpstreamError("unknown", String(e), undefined, { cause: e });
      this.deps.metrics?.calls.inc({ provider: target.id, outcome: err.kind });
      this.deps.metrics?.failures.inc({ provider: target.id, kind: err.kind });
      return err;
    } finally {
      this.deps.metrics?.seconds.observe({ provider: target.id }, (performance.now() - started) / 1000);
    }
  }

  /**
   * By priority (lower first); within one priority a weighted draw without replacement, so each
   * provider comes first in proportion to its weight. Providers cooling down are left out.
   */
  private async order(all: Target[]): Promise<Target[]> {
    const byPriority = new Map<number, Target[]>();
    for (const t of all) {
      const p = t.provider.priority ?? 0;
      byPriority.set(p, [...(byPriority.get(p) ?? []), t]);
    }
    const ordered = [...byPriority.entries()].sort(([a], [b]) => a - b).flatMap(([, group]) => this.draw(group));
    if (!this.deps.health) return ordered;
    const usable = await this.deps.health.usable(ordered.map((t) => t.id));
    return ordered.filter((t) => usable.has(t.id));
  }

  private draw(group: Target[]): Target[] {
    const left = [...group];
    const out: Target[] = [];
    while (left.length > 0) {
      const total = left.reduce((sum, t) => sum + (t.provider.weight ?? 1), 0);
      let x = this.random() * total;
      let i = 0;
      while (i < left.length - 1 && x >= (left[i]!.provider.weight ?? 1)) x -= left[i++]!.provider.weight ?? 1;
      out.push(...left.splice(i, 1));
    }
    return out;
  }
}

/** The tokens a call used: what the upstream reported, else the estimate (which is what gets charged then too). */
function usageTotal(answer: ProviderResult, plan: TextPlan): number {
  return answer.usage ? answer.usage.input_tokens + answer.usage.output_tokens : plan.inputTokensEstimate + plan.request.maxTokens;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
