import { randomUUID } from "node:crypto";
import type { Hold, HoldSource, Operation, PlaceHoldRequest } from "@meter/contracts";
import type { BillingClient } from "@meter/service-clients";
import type { AppError, Logger } from "@meter/service-kit";
import { placementOf } from "./placement";

/** What every owner's record says about its hold, whatever else it holds. */
export interface HeldRecord {
  /** The record's own id: its idempotency scope, the hold's `owner_ref` and its first hold id. */
  id: string;
  holdId: string;
  keyId: string;
  /** The key's organization: a release of the hold id is recorded under it. */
  organizationId: string;
  estimatedCost: number;
  /** The operation its hold is placed for (its tariff's). */
  operation: Operation;
  model: string;
  /** Attempts started: the request's own is 1; each take-over adds one. */
  attempts: number;
}

/** Thrown out of `reserve` when billing refused the request's own attempt: nothing is reserved and the record is gone. */
export class Refused extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
    this.name = "Refused";
  }
}

/**
 * How a reservation ended, short of a refusal told to the client (Refused):
 * - `held`: the work may run; `hold` is billing's answer (null: held elsewhere, see `divert`);
 * - `pending`: billing's answer was lost, or a release the next step needs did not go through: nothing
 *   more can be said now, and the record's next attempt places again (idempotent on its hold id);
 * - `final`: refused on a later attempt: the record failed, its hold id released with it;
 * - `moved`: the record moved on under this attempt (taken over, finished, or gone): as it now is.
 */
export type Reservation<R> =
  { kind: "held"; record: R; hold: Hold | null } | { kind: "pending"; record: R } | { kind: "final"; record: R } | { kind: "moved"; record: R };

/** What the reservation asks of the owner's store (its repository); each change only from the owner and attempt the record was read at. */
export interface ReservationStore<R extends HeldRecord> {
  /** The record under a fresh hold id; undefined when it moved on. */
  moveHold(record: R, holdId: string): Promise<R | undefined>;
  /** Deletes a record that holds nothing (its idempotency key may be used again); false when it moved on. */
  forget(record: R): Promise<boolean>;
  find(id: string): Promise<R | undefined>;
}

export interface ReservationDeps<R extends HeldRecord> {
  source: HoldSource;
  billing: Pick<BillingClient, "placeHold" | "release">;
  store: ReservationStore<R>;
  /**
   * Makes the record final as failed with the refusal, committed with the release of its hold id
   * (a tombstone, so a placement of it still in flight never lands); undefined when it moved on.
   */
  fail(record: R, refusal: AppError): Promise<R | undefined>;
  logger: Logger;
  /** The refusal told when billing could certainly not be reached on the request's own attempt (503). */
  unavailable: () => AppError;
  /**
   * A last chance before a refusal of the request's own attempt under its own id (the only placement
   * that can have been made): the owner may hold the work elsewhere (text: an allowance of this process
   * with room). The record so held; undefined to let the refusal stand; "unknown" when whether it moved
   * is not known (pending: the next attempt finds out).
   */
  divert?: (record: R) => Promise<R | undefined | "unknown">;
}

/** The placement of a record's current hold, in its source's name, the record being the hold's `owner_ref`. */
export function holdRequestOf(source: HoldSource, record: HeldRecord): PlaceHoldRequest {
  return {
    hold_id: record.holdId,
    key_id: record.keyId,
    amount_microrub: record.estimatedCost,
    operation: record.operation,
    model: record.model,
    source,
    owner_ref: record.id,
  };
}

/** Fresh hold ids one attempt may try before it leaves the rest to the next attempt. */
const FRESH_IDS_PER_ATTEMPT = 2;

/**
 * The client side of a hold placement (docs/api.md, "Holds: the owner's side"), one state machine for
 * every service that places holds:
 *
 *   placed ------------------------------------> held
 *   id used up (another amount, or resolved) ---> the own id released, the record under a fresh id, placed again
 *   refused, the request's own attempt ---------> forgotten, Refused thrown (the client hears billing's error)
 *   refused, a later attempt -------------------> final: failed with billing's error, its hold id released
 *   never delivered, the request's own attempt -> as refused, with `unavailable` (503)
 *   answer lost (billing may have held) --------> pending: the next attempt places again under the same id
 *
 * A later attempt's client has seen the request accepted (a 202, a job), so a refusal then is its final
 * answer, replayed to every retry; only the request's own attempt, whose client hears the refusal
 * directly, leaves no trace. A hold id other than the record's own is released before the record is
 * forgotten, so a placement of it whose answer was lost can never land afterwards.
 */
export class HoldReservation<R extends HeldRecord> {
  constructor(private readonly deps: ReservationDeps<R>) {}

  /** The placement of a record's current hold, idempotent on its hold id. */
  place(record: HeldRecord): Promise<Hold> {
    return this.deps.billing.placeHold(holdRequestOf(this.deps.source, record));
  }

  /** `placement`: the one the request path started alongside its claim (of the record's own hold id). */
  async reserve(record: R, placement?: Promise<Hold>, freshIds = FRESH_IDS_PER_ATTEMPT): Promise<Reservation<R>> {
    const placed = await placementOf(placement ?? this.place(record));
    switch (placed.kind) {
      case "held":
        return { kind: "held", record, hold: placed.hold };
      case "id_used_up":
        return this.reserveAnew(record, placed.why, freshIds);
      case "refused":
        return this.refuse(record, placed.error);
      case "unreachable":
        if (placed.error.delivery === "not_delivered" && record.attempts === 1) return this.refuse(record, this.deps.unavailable());
        this.deps.logger.warn(
          { record: record.id, hold: record.holdId, err: placed.error },
          "hold placement outcome unknown; placed again at the next attempt",
        );
        return { kind: "pending", record };
    }
  }

  private async refuse(record: R, error: AppError): Promise<Reservation<R>> {
    if (record.attempts > 1) {
      const failed = await this.deps.fail(record, error);
      return failed ? { kind: "final", record: failed } : this.moved(record);
    }
    if (record.holdId === record.id && this.deps.divert) {
      const diverted = await this.deps.divert(record);
      if (diverted === "unknown") return { kind: "pending", record };
      if (diverted) return { kind: "held", record: diverted, hold: null };
    }
    if (record.holdId !== record.id) {
      try {
        await this.deps.billing.release(record.holdId, "refused; nothing reserved", record.organizationId);
      } catch (e) {
        // Not yet safe to forget: the next attempt places (and is refused, or held) again.
        this.deps.logger.warn({ err: e, record: record.id }, "could not release a refused record's hold id; pending");
        return { kind: "pending", record };
      }
    }
    // Taken over meanwhile (this attempt ran past its lease): whoever has it now places again, so the
    // client must not be told "refused" of work that may yet run and be charged.
    if (!(await this.deps.store.forget(record))) return this.moved(record);
    throw new Refused(error);
  }

  private async reserveAnew(record: R, why: string, freshIds: number): Promise<Reservation<R>> {
    if (freshIds === 0) {
      this.deps.logger.error({ record: record.id, hold: record.holdId }, `${why}, again; left to the next attempt`);
      return { kind: "pending", record };
    }
    this.deps.logger.warn({ record: record.id, hold: record.holdId }, `${why}; reserving under a new hold id`);
    // Best effort: a used-up id holds nothing, and a stray placement of it is the hold audit's to release.
    if (record.holdId === record.id) await this.deps.billing.release(record.holdId, "replaced by a new hold id", record.organizationId).catch(() => undefined);
    const moved = await this.deps.store.moveHold(record, randomUUID());
    if (!moved) return this.moved(record);
    return this.reserve(moved, undefined, freshIds - 1);
  }

  private async moved(record: R): Promise<Reservation<R>> {
    return { kind: "moved", record: (await this.deps.store.find(record.id)) ?? record };
  }
}
