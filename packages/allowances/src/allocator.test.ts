import type { GrantAllowanceRequest, Hold } from "@meter/contracts";
import { AppError, createLogger } from "@meter/service-kit";
import { Allocator, type AllocatorSettings } from "./allocator";
import type { AllowanceStore } from "./allowance-store";

/** The holder's table as the allocator sees it through AllowanceStore; `reserving` stands for requests in flight. */
class MemoryStore implements AllowanceStore {
  rows = new Map<string, { state: string; granted: number; used: number; reserving: number; signature?: string | null }>();
  closedWithUsed: [string, number][] = [];
  async begin(a: { id: string }) {
    this.rows.set(a.id, { state: "granting", granted: 0, used: 0, reserving: 0 });
  }
  async open(id: string, granted: number, _usableUntil: Date, signature: string | null) {
    const r = this.rows.get(id)!;
    if (r.state !== "granting") return false;
    Object.assign(r, { state: "open", granted, signature });
    return true;
  }
  async refused(id: string) {
    this.rows.get(id)!.state = "closed";
  }
  async closing(ids: readonly string[]) {
    for (const id of ids) {
      const r = this.rows.get(id)!;
      if (r.state === "granting" || r.state === "open") r.state = "closing";
    }
  }
  async closingAll() {
    await this.closing([...this.rows.keys()]);
  }
  async closeSettled() {
    const closed: string[] = [];
    for (const [id, r] of this.rows) {
      if (r.state === "closing" && r.reserving === 0) {
        r.state = "closed";
        this.closedWithUsed.push([id, r.used]);
        closed.push(id);
      }
    }
    return closed;
  }
}

const KEY = { keyId: "00000000-0000-4000-8000-00000000000a", organizationId: "00000000-0000-4000-8000-00000000000b" };
const settings: AllocatorSettings = { seconds: 2, minRequests: 4, idleMs: 2_000, refusedBackoffMs: 5_000 };
const DAY_END = "2030-01-02T00:00:00.000Z";

function holdOf(req: GrantAllowanceRequest, amount: number, status: Hold["status"] = "active"): Hold {
  return {
    hold_id: req.hold_id,
    organization_id: KEY.organizationId,
    key_id: req.key_id,
    status,
    amount_microrub: amount,
    settled_microrub: null,
    operation: "text",
    model: null,
    source: "text",
    owner_ref: req.owner_ref,
    budget_day: null,
    created_at: new Date().toISOString(),
    resolved_at: null,
    kind: "allowance",
    consumed_microrub: 0,
    usable_until: DAY_END,
    grant_signature: `signed-${req.hold_id}`,
  };
}

function setup(grant: (req: GrantAllowanceRequest) => Promise<Hold>) {
  let now = Date.parse("2030-01-01T12:00:00.000Z");
  const store = new MemoryStore();
  const asked: GrantAllowanceRequest[] = [];
  const allocator = new Allocator({
    store,
    grant: (req) => {
      asked.push(req);
      return grant(req);
    },
    settings,
    operation: "text",
    source: "text",
    logger: createLogger("test", "silent"),
    now: () => now,
  });
  const flush = () => new Promise((r) => setImmediate(r));
  return { store, asked, allocator, flush, advance: (ms: number) => (now += ms) };
}

it("a key with no allowance goes per request once and asks one grant of at least ALLOWANCE_MIN_REQUESTS requests", async () => {
  const { allocator, asked, flush } = setup(async (req) => holdOf(req, req.amount_microrub));
  expect(allocator.take(KEY, 100)).toBeNull();
  expect(allocator.take(KEY, 100)).toBeNull();
  await flush();
  expect(asked).toHaveLength(1);
  expect(asked[0]).toMatchObject({ key_id: KEY.keyId, min_microrub: 400, operation: "text", source: "text", owner_ref: asked[0]!.hold_id });
  expect(asked[0]!.amount_microrub).toBeGreaterThanOrEqual(400);
  expect(allocator.take(KEY, 100)).toBe(asked[0]!.hold_id);
});

it("records billing's signature of a grant with the allowance: it covers every request placed on it", async () => {
  const { allocator, asked, store, flush } = setup(async (req) => holdOf(req, req.amount_microrub));
  allocator.take(KEY, 100);
  await flush();
  expect(store.rows.get(asked[0]!.hold_id)).toMatchObject({ state: "open", signature: `signed-${asked[0]!.hold_id}` });
});

it("never takes more than was granted: the request after the last that fits goes per request", async () => {
  const { allocator, asked, flush } = setup(async (req) => holdOf(req, 350));
  allocator.take(KEY, 100);
  await flush();
  const id = asked[0]!.hold_id;
  expect([1, 2, 3].map(() => allocator.take(KEY, 100))).toEqual([id, id, id]);
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBeNull();
  expect(allocator.takeIfRoom(KEY.keyId, 50)).toBe(id);
});

it("an estimate given back makes room again; an allowance found closed is no longer used", async () => {
  const { allocator, asked, flush } = setup(async (req) => holdOf(req, 100));
  allocator.take(KEY, 100);
  await flush();
  const id = asked[0]!.hold_id;
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBe(id);
  allocator.giveBack(id, 100, true);
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBe(id);
  allocator.giveBack(id, 100, false);
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBeNull();
});

it("sizes by the key's recent spend: a busy key asks for about ALLOWANCE_SECONDS of it", async () => {
  let answerFirst: (e: Error) => void = () => undefined;
  const { allocator, asked, flush, advance } = setup((req) =>
    asked.length === 1 ? new Promise((_, reject) => (answerFirst = reject)) : Promise.resolve(holdOf(req, req.amount_microrub)),
  );
  // 100 requests of 100 over a second while the first grant (sized when nothing was known) is under way.
  for (let i = 0; i < 100; i++) {
    allocator.take(KEY, 100);
    advance(10);
    if (i === 0) await flush();
  }
  expect(asked.map((a) => a.amount_microrub)).toEqual([400]);
  answerFirst(new Error("no answer"));
  await flush();
  allocator.take(KEY, 100);
  await flush();
  // About 6 300 a second (10 000 over the last second, decayed with a one-second constant), for 2 s.
  expect(asked[1]!.amount_microrub).toBeGreaterThan(12_000);
  expect(asked[1]!.amount_microrub).toBeLessThan(14_000);
  expect(asked[1]!.min_microrub).toBe(400);
});

it("a refused grant records nothing held and asks no more for the key until the back-off ends", async () => {
  const { allocator, asked, store, flush, advance } = setup(async () => {
    throw new AppError("daily_budget_exceeded", "near the limit");
  });
  allocator.take(KEY, 100);
  await flush();
  expect([...store.rows.values()].map((r) => r.state)).toEqual(["closed"]);
  allocator.take(KEY, 100);
  await flush();
  expect(asked).toHaveLength(1);
  advance(5_001);
  allocator.take(KEY, 100);
  await flush();
  expect(asked).toHaveLength(2);
});

it("a grant with no answer is closed with nothing used, so billing releases it or tombstones its id", async () => {
  const { allocator, store, flush } = setup(async () => {
    throw new Error("socket hang up");
  });
  expect(allocator.take(KEY, 100)).toBeNull();
  await flush();
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBeNull();
  await allocator.tick();
  expect(store.closedWithUsed).toEqual([[[...store.rows.keys()][0], 0]]);
  expect(allocator.size).toBe(0);
});

it("closes an idle allowance only once no request on it is in flight, with what was used", async () => {
  const { allocator, asked, store, flush, advance } = setup(async (req) => holdOf(req, 1_000));
  allocator.take(KEY, 100);
  await flush();
  const id = asked[0]!.hold_id;
  expect(allocator.take(KEY, 100)).toBe(id);
  const row = store.rows.get(id)!;
  row.used = 100;
  row.reserving = 1;
  advance(1_999);
  await allocator.tick();
  expect(row.state).toBe("open");
  advance(1);
  await allocator.tick();
  expect(row.state).toBe("closing");
  expect(allocator.takeIfRoom(KEY.keyId, 100)).toBeNull();
  row.reserving = 0;
  await allocator.tick();
  expect(store.closedWithUsed).toEqual([[id, 100]]);
  expect(allocator.size).toBe(0);
});

it("closes an allowance at the end of its budget day, and one with less room than the key's estimate", async () => {
  const { allocator, asked, store, flush, advance } = setup(async (req) => holdOf(req, 250));
  allocator.take(KEY, 100);
  await flush();
  const id = asked[0]!.hold_id;
  allocator.take(KEY, 100);
  allocator.take(KEY, 100);
  await allocator.tick();
  expect(store.rows.get(id)!.state).toBe("closed");

  allocator.take(KEY, 10);
  await flush();
  const second = asked[1]!.hold_id;
  advance(Date.parse(DAY_END) - Date.parse("2030-01-01T12:00:00.000Z") - 1);
  expect(allocator.take(KEY, 10)).toBe(second);
  advance(1);
  expect(allocator.take(KEY, 10)).toBeNull();
  await allocator.tick();
  expect(store.rows.get(second)!.state).toBe("closed");
});

it("a stop closes every allowance and asks no new grant", async () => {
  const { allocator, asked, store, flush } = setup(async (req) => holdOf(req, 1_000));
  allocator.take(KEY, 100);
  await flush();
  allocator.take(KEY, 100);
  await allocator.stop();
  expect([...store.rows.values()].map((r) => r.state)).toEqual(["closed"]);
  allocator.take({ ...KEY, keyId: "00000000-0000-4000-8000-00000000000c" }, 100);
  await flush();
  expect(asked).toHaveLength(1);
});
