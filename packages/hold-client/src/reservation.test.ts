import { randomUUID } from "node:crypto";
import type { Hold, PlaceHoldRequest } from "@meter/contracts";
import { BillingUnreachable } from "@meter/service-clients";
import { AppError, createLogger } from "@meter/service-kit";
import { HoldReservation, Refused, type HeldRecord, type ReservationDeps } from "./reservation";

/**
 * Every transition of the client side of a hold placement (reservation.ts), without a database: an
 * in-memory store that keeps the real ones' guard (a record moves on only from the attempt it was read
 * at), and a billing that answers what each test queues.
 */
interface Rec extends HeldRecord {
  state: "reserving" | "failed";
  error?: string;
}

type Answer = Hold["status"] | Error;

class Billing {
  readonly placed: PlaceHoldRequest[] = [];
  readonly released: string[] = [];
  readonly answers: Answer[] = [];
  failReleases = 0;

  placeHold = async (req: PlaceHoldRequest): Promise<Hold> => {
    this.placed.push(req);
    const answer = this.answers.shift() ?? "active";
    if (answer instanceof Error) throw answer;
    return holdOf(req.hold_id, answer);
  };

  /** The organization each release named (billing records a release of an unknown id under it). */
  readonly releasedUnder: (string | undefined)[] = [];

  release = async (holdId: string, _reason: string, organizationId?: string): Promise<Hold> => {
    if (this.failReleases > 0) {
      this.failReleases--;
      throw new BillingUnreachable("unknown");
    }
    this.released.push(holdId);
    this.releasedUnder.push(organizationId);
    return holdOf(holdId, "released");
  };
}

class Store {
  readonly records = new Map<string, Rec>();
  readonly forgotten: string[] = [];
  readonly failed: { id: string; code: string }[] = [];

  add(over: Partial<Rec> = {}): Rec {
    const id = over.id ?? randomUUID();
    const r: Rec = {
      id,
      holdId: id,
      keyId: randomUUID(),
      organizationId: randomUUID(),
      estimatedCost: 500,
      operation: "ocr",
      model: "m",
      attempts: 1,
      state: "reserving",
      ...over,
    };
    this.records.set(id, r);
    return r;
  }

  /** Another process takes the record over (its next attempt). */
  takeOver(r: Rec): Rec {
    const next = { ...r, attempts: r.attempts + 1 };
    this.records.set(r.id, next);
    return next;
  }

  private current(seen: Rec): Rec | undefined {
    const r = this.records.get(seen.id);
    return r && r.state === "reserving" && r.attempts === seen.attempts ? r : undefined;
  }

  moveHold = async (seen: Rec, holdId: string): Promise<Rec | undefined> => {
    const r = this.current(seen);
    if (!r) return undefined;
    const moved = { ...r, holdId };
    this.records.set(r.id, moved);
    return moved;
  };

  forget = async (seen: Rec): Promise<boolean> => {
    if (!this.current(seen)) return false;
    this.records.delete(seen.id);
    this.forgotten.push(seen.id);
    return true;
  };

  fail = async (seen: Rec, refusal: AppError): Promise<Rec | undefined> => {
    const r = this.current(seen);
    if (!r) return undefined;
    const failed: Rec = { ...r, state: "failed", error: refusal.code };
    this.records.set(r.id, failed);
    this.failed.push({ id: r.id, code: refusal.code });
    return failed;
  };

  find = async (id: string): Promise<Rec | undefined> => this.records.get(id);
}

function holdOf(id: string, status: Hold["status"]): Hold {
  return {
    hold_id: id,
    organization_id: null,
    key_id: null,
    status,
    amount_microrub: 500,
    settled_microrub: null,
    operation: "ocr",
    model: "m",
    source: "media-jobs",
    owner_ref: null,
    budget_day: null,
    created_at: new Date().toISOString(),
    resolved_at: null,
  };
}

function setup(over: Partial<ReservationDeps<Rec>> = {}) {
  const billing = new Billing();
  const store = new Store();
  const reservation = new HoldReservation<Rec>({
    source: "media-jobs",
    billing,
    store,
    fail: store.fail,
    logger: createLogger("hold-client-test", "silent"),
    unavailable: () => new AppError("service_unavailable", "billing unreachable"),
    ...over,
  });
  return { billing, store, reservation };
}

const refusal = () => new AppError("daily_budget_exceeded", "over budget");

describe("HoldReservation: placed", () => {
  it("places the record's hold in its source's name, the record being the owner, and answers held with billing's hold", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    const reserved = await reservation.reserve(r);
    expect(reserved).toMatchObject({ kind: "held", record: r, hold: { hold_id: r.id, status: "active" } });
    expect(billing.placed).toEqual([
      { hold_id: r.id, key_id: r.keyId, amount_microrub: 500, operation: "ocr", model: "m", source: "media-jobs", owner_ref: r.id },
    ]);
  });

  it("uses the placement the request path started instead of placing again", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    const started = reservation.place(r);
    expect(await reservation.reserve(r, started)).toMatchObject({ kind: "held" });
    expect(billing.placed).toHaveLength(1);
  });
});

describe("HoldReservation: a used-up hold id", () => {
  it.each([
    ["taken with another amount", new AppError("conflict", "taken")],
    ["already released", "released" as const],
    ["already settled", "settled" as const],
  ])("(%s): the own id is released and the record reserved under a fresh id in the same attempt", async (_why, answer) => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push(answer);
    const reserved = await reservation.reserve(r);
    expect(reserved.kind).toBe("held");
    expect(reserved.record.holdId).not.toBe(r.id);
    expect(billing.placed.map((p) => p.hold_id)).toEqual([r.id, reserved.record.holdId]);
    expect(billing.released).toEqual([r.id]);
    expect(billing.releasedUnder).toEqual([r.organizationId]);
  });

  it("a fresh id that is used up again and again: pending after two fresh ids, never an endless loop", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push("released", "released", "released", "released");
    const reserved = await reservation.reserve(r);
    expect(reserved.kind).toBe("pending");
    expect(billing.placed).toHaveLength(3);
  });

  it("the record moved on before its hold id could be changed: moved, nothing placed again", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    const theirs = store.takeOver(r);
    billing.answers.push("released");
    expect(await reservation.reserve(r)).toEqual({ kind: "moved", record: theirs });
    expect(billing.placed).toHaveLength(1);
  });
});

describe("HoldReservation: refused", () => {
  it("on the request's own attempt: forgotten, nothing released, Refused carries billing's error", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push(refusal());
    const refused = await reservation.reserve(r).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Refused);
    expect((refused as Refused).error.code).toBe("daily_budget_exceeded");
    expect(store.forgotten).toEqual([r.id]);
    expect(billing.released).toEqual([]);
  });

  it("on the request's own attempt under a fresh id: that id is released first (a tombstone), then forgotten", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add({ holdId: randomUUID() });
    billing.answers.push(refusal());
    await expect(reservation.reserve(r)).rejects.toBeInstanceOf(Refused);
    expect(billing.released).toEqual([r.holdId]);
    expect(store.forgotten).toEqual([r.id]);
  });

  it("under a fresh id whose release fails: pending, never forgotten (its placement could still land)", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add({ holdId: randomUUID() });
    billing.answers.push(refusal());
    billing.failReleases = 1;
    expect(await reservation.reserve(r)).toMatchObject({ kind: "pending" });
    expect(store.forgotten).toEqual([]);
  });

  it("on a later attempt: final, failed with billing's error (its client saw it accepted), never forgotten", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add({ attempts: 2 });
    billing.answers.push(refusal());
    const reserved = await reservation.reserve(r);
    expect(reserved).toMatchObject({ kind: "final", record: { state: "failed", error: "daily_budget_exceeded" } });
    expect(store.forgotten).toEqual([]);
    expect(store.failed).toEqual([{ id: r.id, code: "daily_budget_exceeded" }]);
  });

  it("taken over while it was refused: the client is not told, the record as the new owner has it", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push(refusal());
    const placement = reservation.place(r);
    const theirs = store.takeOver(r);
    expect(await reservation.reserve(r, placement)).toEqual({ kind: "moved", record: theirs });
    expect(store.records.get(r.id)).toEqual(theirs);
  });

  it("refused on a later attempt, taken over meanwhile: moved, not failed", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add({ attempts: 2 });
    billing.answers.push(refusal());
    const placement = reservation.place(r);
    store.takeOver(r);
    expect((await reservation.reserve(r, placement)).kind).toBe("moved");
    expect(store.failed).toEqual([]);
  });
});

describe("HoldReservation: divert (a refusal held elsewhere)", () => {
  it("the request's own refused attempt is held where divert put it", async () => {
    const elsewhere = { id: "", holdId: randomUUID() };
    const { billing, store, reservation } = setup({ divert: async (r) => ({ ...r, holdId: elsewhere.holdId }) });
    const r = store.add();
    billing.answers.push(refusal());
    expect(await reservation.reserve(r)).toMatchObject({ kind: "held", hold: null, record: { id: r.id, holdId: elsewhere.holdId } });
    expect(store.forgotten).toEqual([]);
  });

  it("whether it moved is not known: pending, never forgotten", async () => {
    const { billing, store, reservation } = setup({ divert: async () => "unknown" });
    const r = store.add();
    billing.answers.push(refusal());
    expect((await reservation.reserve(r)).kind).toBe("pending");
    expect(store.forgotten).toEqual([]);
  });

  it("no room elsewhere: the refusal stands", async () => {
    const { billing, store, reservation } = setup({ divert: async () => undefined });
    const r = store.add();
    billing.answers.push(refusal());
    await expect(reservation.reserve(r)).rejects.toBeInstanceOf(Refused);
  });

  it("never asked on a later attempt nor under a fresh id: an earlier placement could still land", async () => {
    const asked: string[] = [];
    const { billing, store, reservation } = setup({
      divert: async (r) => {
        asked.push(r.id);
        return r;
      },
    });
    billing.answers.push(refusal(), refusal());
    await reservation.reserve(store.add({ attempts: 2 }));
    await expect(reservation.reserve(store.add({ holdId: randomUUID() }))).rejects.toBeInstanceOf(Refused);
    expect(asked).toEqual([]);
  });
});

describe("HoldReservation: billing unreachable", () => {
  it("never delivered on the request's own attempt: refused as unavailable, forgotten", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push(new BillingUnreachable("not_delivered"));
    const refused = await reservation.reserve(r).catch((e: unknown) => e);
    expect((refused as Refused).error.code).toBe("service_unavailable");
    expect(store.forgotten).toEqual([r.id]);
  });

  it("the answer lost (billing may have held): pending, the record and its hold id kept", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add();
    billing.answers.push(new BillingUnreachable("unknown"));
    expect(await reservation.reserve(r)).toEqual({ kind: "pending", record: r });
    expect(store.forgotten).toEqual([]);
    expect(billing.released).toEqual([]);
  });

  it("never delivered on a later attempt: pending (an earlier attempt's placement may have held)", async () => {
    const { billing, store, reservation } = setup();
    const r = store.add({ attempts: 3 });
    billing.answers.push(new BillingUnreachable("not_delivered"));
    expect((await reservation.reserve(r)).kind).toBe("pending");
    expect(store.failed).toEqual([]);
  });

  it("anything but billing's answer (a bug) is thrown, not taken for a refusal", async () => {
    const { billing, store, reservation } = setup();
    billing.answers.push(new TypeError("boom"));
    await expect(reservation.reserve(store.add())).rejects.toBeInstanceOf(TypeError);
  });
});
