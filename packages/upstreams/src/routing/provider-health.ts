import type { Logger } from "@meter/service-kit";
import type { ProviderHealthStore } from "./pg-provider-health.store";
import type { Caps, ProviderHealth } from "./upstream-router";

/** How stale this process's view of the breakers may be: another replica's cooldown is seen within it. */
const VIEW_MAX_AGE_MS = 250;

export interface BreakerSettings {
  /** Consecutive failures (refusals, no answer) that open a provider's breaker. */
  failuresToOpen: number;
  /** How long an open breaker stays open before one trial call is let through. */
  cooldownMs: number;
}

/** A provider's breaker and this minute's counts; a provider never seen failing or capped is closed with none. */
export interface ProviderState {
  state: "closed" | "open" | "half_open";
  failures: number;
  openUntil: Date | null;
  minuteCalls: number;
  minuteTokens: number;
}

interface Seen {
  failures: number;
  /** Date.now() until which it is open, by the database's clock at the last read. */
  openUntil: number;
}

/**
 * A circuit breaker per provider, kept in text's database so that every replica sees one state: open
 * after `failuresToOpen` consecutive failures (or for the upstream's Retry-After), then after the
 * cooldown one trial call (half-open), claimed by one process; an answer closes it. Each process reads
 * the whole (small) table at most every VIEW_MAX_AGE_MS, so a healthy provider costs no query per request.
 * If the database cannot be read, every provider counts as usable: health never stops traffic by itself.
 */
export class SharedProviderHealth implements ProviderHealth {
  private view = new Map<string, Seen>();
  private readAt = 0;
  private reading: Promise<void> | undefined;
  private forgotAt = 0;

  constructor(
    private readonly repo: ProviderHealthStore,
    private readonly settings: BreakerSettings,
    private readonly logger: Logger,
  ) {}

  async usable(ids: readonly string[]): Promise<Set<string>> {
    await this.fresh();
    const now = Date.now();
    const usable = new Set<string>();
    for (const id of ids) {
      const seen = this.view.get(id);
      if (!seen || (seen.openUntil <= now && seen.failures < this.settings.failuresToOpen)) usable.add(id);
      else if (seen.openUntil <= now && (await this.claimTrial(id))) usable.add(id);
    }
    return usable;
  }

  async failed(id: string, retryAfterMs: number | undefined): Promise<void> {
    const seen = this.view.get(id) ?? { failures: 0, openUntil: 0 };
    seen.failures += 1;
    this.view.set(id, seen);
    try {
      await this.repo.failed(id, this.settings.failuresToOpen, this.settings.cooldownMs, retryAfterMs ?? null);
    } catch (e) {
      this.logger.warn({ err: e, provider: id }, "a provider's failure could not be recorded");
    }
    // Read again at the next request: the failure may have opened the breaker.
    this.readAt = 0;
  }

  async succeeded(id: string): Promise<void> {
    const seen = this.view.get(id);
    // Nothing to close: no write on the path of a healthy provider.
    if (!seen || (seen.failures === 0 && seen.openUntil <= Date.now())) return;
    this.view.delete(id);
    try {
      await this.repo.succeeded(id);
    } catch (e) {
      this.logger.warn({ err: e, provider: id }, "a provider's recovery could not be recorded");
    }
  }

  async admit(id: string, caps: Caps, tokens: number): Promise<{ minute: Date | null } | undefined> {
    try {
      if (Date.now() - this.forgotAt > 60_000) {
        this.forgotAt = Date.now();
        await this.repo.forgetPastMinutes();
      }
      // A request larger than the whole cap would never fit in any minute: passed over at once.
      if (caps.tpm !== undefined && tokens > caps.tpm) return undefined;
      const minute = await this.repo.admit(id, caps.rpm ?? null, caps.tpm ?? null, tokens);
      return minute ? { minute } : undefined;
    } catch (e) {
      this.logger.warn({ err: e, provider: id }, "a provider's rpm/tpm count could not be read; calling it");
      return { minute: null };
    }
  }

  async countTokens(id: string, minute: Date, delta: number): Promise<void> {
    try {
      await this.repo.countTokens(id, minute, delta);
    } catch (e) {
      this.logger.warn({ err: e, provider: id }, "a provider's tpm count could not be corrected");
    }
  }

  /**
   * Each provider's breaker as the database sees it now, with this minute's counts: for the operator's
   * view and the /metrics gauge (read at each scrape or call, not on the request path).
   */
  async states(): Promise<Map<string, ProviderState>> {
    const [rows, minutes] = await Promise.all([this.repo.all(), this.repo.thisMinute()]);
    const out = new Map<string, ProviderState>();
    const state = (id: string) => {
      let s = out.get(id);
      if (!s) out.set(id, (s = { state: "closed", failures: 0, openUntil: null, minuteCalls: 0, minuteTokens: 0 }));
      return s;
    };
    for (const r of rows) {
      const s = state(r.provider);
      s.failures = r.failures;
      if (r.openForMs > 0) {
        s.state = "open";
        s.openUntil = new Date(Date.now() + r.openForMs);
      } else if (r.failures >= this.settings.failuresToOpen) s.state = "half_open";
    }
    for (const m of minutes) Object.assign(state(m.provider), { minuteCalls: m.calls, minuteTokens: m.tokens });
    return out;
  }

  private async claimTrial(id: string): Promise<boolean> {
    try {
      const claimed = await this.repo.claimTrial(id, this.settings.failuresToOpen, this.settings.cooldownMs);
      if (!claimed) this.view.set(id, { failures: this.settings.failuresToOpen, openUntil: Date.now() + this.settings.cooldownMs });
      else this.logger.info({ provider: id }, "provider cooled down; one trial call");
      return claimed;
    } catch (e) {
      this.logger.warn({ err: e, provider: id }, "a provider's trial could not be claimed; calling it");
      return true;
    }
  }

  private fresh(): Promise<void> {
    if (Date.now() - this.readAt < VIEW_MAX_AGE_MS) return Promise.resolve();
    this.reading ??= this.repo
      .all()
      .then((rows) => {
        const now = Date.now();
        this.view = new Map(rows.map((r) => [r.provider, { failures: r.failures, openUntil: now + r.openForMs }]));
        this.readAt = now;
      })
      .catch((e: unknown) => {
        this.logger.warn({ err: e }, "provider health could not be read; every provider counts as usable");
        this.view = new Map();
        this.readAt = Date.now();
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}
