import { randomUUID } from "node:crypto";
import type { HoldSource, Operation } from "@meter/contracts";
import { AppError, type Logger } from "@meter/service-kit";
import type { AllowanceKey, AllowanceStore, GrantAllowance } from "./allowance-store";
import { allowanceSize, type SizingSettings } from "./sizing";
import { SpendRate } from "./spend-rate";

export interface AllocatorSettings extends SizingSettings {
  /** An allowance no request was taken from for this long is closed (ALLOWANCE_IDLE_MS). */
  idleMs: number;
  /** After billing refused a key an allowance, no new grant is asked for it this long. */
  refusedBackoffMs: number;
}

export interface AllocatorDeps {
  store: AllowanceStore;
  grant: GrantAllowance;
  settings: AllocatorSettings;
  /** What the allowances are for and who holds them, as billing records them. */
  operation: Operation;
  source: HoldSource;
  logger: Logger;
  now?: () => number;
  newId?: () => string;
}

/** One of this process's allowances as the allocator tracks it; `used` counts estimates taken, committed or not yet. */
interface Held {
  id: string;
  keyId: string;
  granted: number;
  used: number;
  usableUntil: number;
  lastUsedAt: number;
  state: "open" | "closing";
  /** When the closing decision was committed (until then every tick tries again). */
  closingSince: number | null;
}

interface KeyState {
  rate: SpendRate;
  lastEstimate: number;
  lastSeenAt: number;
  granting: boolean;
  refusedUntil: number;
}

/** A closing allowance this process did not close within this long was closed elsewhere (a take-over). */
const CLOSING_FORGET_MS = 60_000;

/** A key with no allowance and no request for this long is forgotten (its spend rate has decayed to nothing). */
const KEY_FORGET_MS = 60_000;

/**
 * This process's allowances, in memory, per key. A request takes its estimate from an open allowance
 * of its key with room (`take`); the holder's claim statement then adds it to the allowance's `used`
 * in the request's own commit, and refuses it if the allowance is no longer open (`giveBack`). With no
 * room the request takes a per-request hold and one grant is started for the key in the background.
 *
 * Allowances close (`tick`) when idle, past their budget day, or with less room than the key's last
 * estimate: first `closing` (no new request), then `closed` with the release command once every
 * request on them is final. Nothing here waits on billing on a request's path.
 */
export class Allocator {
  private readonly held = new Map<string, Held>();
  private readonly byKey = new Map<string, Held[]>();
  private readonly keys = new Map<string, KeyState>();
  private readonly grants = new Map<string, Promise<void>>();
  private readonly now: () => number;
  private readonly newId: () => string;
  private stopped = false;

  constructor(private readonly deps: AllocatorDeps) {
    this.now = deps.now ?? Date.now;
    this.newId = deps.newId ?? randomUUID;
  }

  /**
   * The id of an allowance of the key that `estimate` was taken from, or null: the request then takes a
   * per-request hold, and a grant is started for the key unless one is under way or billing refused it lately.
   */
  take(key: AllowanceKey, estimate: number): string | null {
    const now = this.now();
    const ks = this.keyState(key.keyId, now);
    ks.rate.add(estimate, now);
    ks.lastEstimate = estimate;
    const id = this.takeIfRoom(key.keyId, estimate);
    if (id === null) this.startGrant(key, estimate, ks, now);
    return id;
  }

  /**
   * Resolves once the key's grant under way, if any, has its answer. A request refused a per-request
   * hold waits for it: the refusal may have counted the money that grant is parking.
   */
  async whenGranted(keyId: string): Promise<void> {
    await this.grants.get(keyId);
  }

  /** Like take, without counting the request again or starting a grant (a request moving off a refused hold). */
  takeIfRoom(keyId: string, estimate: number): string | null {
    const now = this.now();
    for (const a of this.byKey.get(keyId) ?? []) {
      if (a.state === "open" && now < a.usableUntil && a.granted - a.used >= estimate) {
        a.used += estimate;
        a.lastUsedAt = now;
        return a.id;
      }
    }
    return null;
  }

  /**
   * An estimate taken from the allowance did not become a request on it: the claim found the key
   * taken, or the allowance no longer usable (then no request is taken from it again, and it is closed).
   */
  giveBack(id: string, estimate: number, stillOpen: boolean): void {
    const a = this.held.get(id);
    if (!a) return;
    a.used -= estimate;
    if (!stillOpen) a.state = "closing";
  }

  /** Allowances held now, open or closing (tests, metrics). */
  get size(): number {
    return this.held.size;
  }

  /** The closing decisions, then closing what has no request in flight. Run periodically. */
  async tick(): Promise<number> {
    const now = this.now();
    for (const a of this.held.values()) {
      if (a.state !== "open") continue;
      const last = this.keys.get(a.keyId)?.lastEstimate ?? 0;
      if (now - a.lastUsedAt >= this.deps.settings.idleMs || now >= a.usableUntil || a.granted - a.used < Math.max(1, last)) a.state = "closing";
    }
    const toWrite = [...this.held.values()].filter((a) => a.state === "closing" && a.closingSince === null);
    if (toWrite.length > 0) {
      await this.deps.store.closing(toWrite.map((a) => a.id));
      for (const a of toWrite) a.closingSince = now;
    }
    const closed = await this.deps.store.closeSettled();
    for (const id of closed) {
      const a = this.held.get(id);
      if (a) this.forget(a);
    }
    for (const a of this.held.values()) {
      // Closed by another process (one that took this one for dead): nothing left to do here.
      if (a.closingSince !== null && now - a.closingSince > CLOSING_FORGET_MS) {
        this.deps.logger.warn({ allowance: a.id }, "an allowance closing for a minute was not closed here; left to the reconcilers");
        this.forget(a);
      }
    }
    for (const [keyId, ks] of this.keys) {
      if (!ks.granting && !this.byKey.has(keyId) && now - ks.lastSeenAt > KEY_FORGET_MS && now >= ks.refusedUntil) this.keys.delete(keyId);
    }
    return closed.length;
  }

  /**
   * A graceful stop: no new grant, every allowance of this process closing, and closed at once when
   * nothing is in flight on it (the rest are closed by the next process's reconciler).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.grants.values()]);
    for (const a of this.held.values()) a.state = "closing";
    await this.deps.store.closingAll();
    for (const a of this.held.values()) a.closingSince ??= this.now();
    await this.tick();
  }

  private keyState(keyId: string, now: number): KeyState {
    let ks = this.keys.get(keyId);
    if (!ks) {
      ks = { rate: new SpendRate(), lastEstimate: 0, lastSeenAt: now, granting: false, refusedUntil: 0 };
      this.keys.set(keyId, ks);
    }
    ks.lastSeenAt = now;
    return ks;
  }

  private startGrant(key: AllowanceKey, estimate: number, ks: KeyState, now: number): void {
    if (this.stopped || ks.granting || now < ks.refusedUntil) return;
    ks.granting = true;
    const size = allowanceSize(estimate, ks.rate.perSecond(now), this.deps.settings);
    const p = this.grantOne(key, size, ks)
      .catch((e: unknown) => this.deps.logger.error({ err: e, key: key.keyId }, "allowance grant failed"))
      .finally(() => {
        ks.granting = false;
        this.grants.delete(key.keyId);
      });
    this.grants.set(key.keyId, p);
  }

  /**
   * One grant, single flight per key: the row first (so a crash leaves a record to close), then
   * billing. Refused: nothing was placed. No answer, or not active: billing may hold it, so it is
   * closed with nothing used, which releases it there or makes its id a tombstone a late grant cannot use.
   */
  private async grantOne(key: AllowanceKey, size: { wanted: number; min: number; unit: number }, ks: KeyState): Promise<void> {
    const id = this.newId();
    await this.deps.store.begin({ id, ...key });
    let hold;
    try {
      hold = await this.deps.grant({
        hold_id: id,
        key_id: key.keyId,
        amount_microrub: size.wanted,
        min_microrub: size.min,
        unit_microrub: size.unit,
        operation: this.deps.operation,
        source: this.deps.source,
        owner_ref: id,
      });
    } catch (e) {
      if (e instanceof AppError) {
        ks.refusedUntil = this.now() + this.deps.settings.refusedBackoffMs;
        try {
          await this.deps.store.refused(id);
        } catch (err) {
          this.deps.logger.warn({ err, allowance: id }, "a refused allowance could not be recorded; closing it instead");
          this.track(id, key.keyId, 0, 0, "closing");
        }
        return;
      }
      this.deps.logger.warn({ err: e, allowance: id }, "allowance grant got no answer; closing it with nothing used");
      this.track(id, key.keyId, 0, 0, "closing");
      return;
    }
    const usableUntil = hold.usable_until ? Date.parse(hold.usable_until) : NaN;
    if (hold.status !== "active" || Number.isNaN(usableUntil) || this.stopped) {
      this.track(id, key.keyId, 0, 0, "closing");
      return;
    }
    let opened: boolean;
    try {
      opened = await this.deps.store.open(id, hold.amount_microrub, new Date(usableUntil), hold.grant_signature ?? null);
    } catch (e) {
      this.deps.logger.warn({ err: e, allowance: id }, "a granted allowance could not be recorded open; closing it with nothing used");
      this.track(id, key.keyId, 0, 0, "closing");
      return;
    }
    // Not opened: a stop or a take-over made it closing meanwhile, and closes it.
    if (opened) this.track(id, key.keyId, hold.amount_microrub, usableUntil, this.stopped ? "closing" : "open");
  }

  private track(id: string, keyId: string, granted: number, usableUntil: number, state: Held["state"]): void {
    const a: Held = { id, keyId, granted, used: 0, usableUntil, lastUsedAt: this.now(), state, closingSince: null };
    this.held.set(id, a);
    const list = this.byKey.get(keyId);
    if (list) list.push(a);
    else this.byKey.set(keyId, [a]);
  }

  private forget(a: Held): void {
    this.held.delete(a.id);
    const list = this.byKey.get(a.keyId)?.filter((x) => x !== a) ?? [];
    if (list.length > 0) this.byKey.set(a.keyId, list);
    else this.byKey.delete(a.keyId);
  }
}
