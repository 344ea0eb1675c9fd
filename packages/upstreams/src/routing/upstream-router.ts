import { providerIdOf, type RoutedProvider } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import { UpstreamError } from "../upstream-error";

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

/** What is routed: a model's providers and what one call of it counts against a provider's `tpm` cap. */
export interface Route {
  /** The model's providers (one: called alone, as a model always was before it had several). */
  providers: readonly RoutedProvider[];
  /** Tokens counted against a `tpm` cap before the call (its estimate); corrected by `usedTokens` after. */
  tokens: number;
}

/** How a request's call upstream ended, over however many providers it took. */
export type RouteOutcome<T> =
  /** `provider` answered; `refused` are the ones that refused before it. */
  | { kind: "answered"; answer: T; provider: string; refused: string[] }
  /** Sent to `provider` and no answer came: it may have run there, so it is asked nobody else. */
  | { kind: "unknown"; provider: string; error: UpstreamError; refused: string[] }
  /** Nothing ran anywhere: every provider refused (or one refused in a way another would too). */
  | { kind: "failed"; error: UpstreamError; refused: string[] }
  /** The record moved on while its provider was being recorded: nothing was sent. */
  | { kind: "moved" };

export interface RouterDeps {
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

/** One call, as the router makes it: `call` sends the request to a provider and throws its failure as an UpstreamError. */
export interface SendOptions<T> {
  timeoutMs: number;
  /** Records the provider on the request before it is sent there (false: the record moved on, nothing is sent). */
  pin: (provider: string, refused: readonly string[]) => Promise<boolean>;
  call: (provider: RoutedProvider, timeoutMs: number) => Promise<T>;
  /** The tokens an answer used, as counted against `tpm` (undefined: the estimate stands). */
  usedTokens?: (answer: T) => number | undefined;
}

/**
 * Sends a request to its model's providers (docs/api.md, "Several providers per model"): by priority,
 * spread by weight among equals, on to the next only when nothing ran on the one before (not sent,
 * 408/429/5xx), each at most once. A model with one provider is called as it always was: no health,
 * no record of the provider, inline retries. The same for every service that calls upstreams: what a
 * call sends is the caller's (`call`).
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
  async send<T>(route: Route, pinned: string | null | undefined, opts: SendOptions<T>): Promise<RouteOutcome<T>> {
    const all = route.providers.map((provider) => ({ id: providerIdOf(provider), provider }));
    if (all.length === 1) return this.sendAlone(all[0]!, opts);
    const previous = pinned ? all.find((t) => t.id === pinned) : undefined;
    const tried = previous ? [previous] : await this.order(all);
    const refused: string[] = [];
    let last: UpstreamError | undefined;
    for (const target of tried) {
      const counted = previous ? { admitted: true as const } : await this.admit(route, target);
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
      const called = await this.call(target, opts);
      if (!(called instanceof UpstreamError)) {
        this.uncount(target, counted, opts.usedTokens?.(called) ?? route.tokens);
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
  private async admit(route: Route, target: Target): Promise<{ admitted: false } | { admitted: true; minute?: Date; tokens?: number }> {
    const { rpm, tpm } = target.provider;
    if ((rpm === undefined && tpm === undefined) || !this.deps.health) return { admitted: true };
    const tokens = tpm === undefined ? 0 : route.tokens;
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
  private async sendAlone<T>(target: Target, opts: SendOptions<T>): Promise<RouteOutcome<T>> {
    for (let retry = 0; ; retry++) {
      const called = await this.call(target, opts);
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
  private async call<T>(target: Target, opts: SendOptions<T>): Promise<T | UpstreamError> {
    const started = performance.now();
    try {
      const answer = await opts.call(target.provider, opts.timeoutMs);
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
