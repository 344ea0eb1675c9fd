import { REFUSAL_ENTRIES_PER_KEY_HOUR, type RefusalRecord } from "@meter/contracts";
import { createLogger, Metrics } from "@meter/service-kit";
import { RefusalRecorder, type Refusal } from "./refusal-recorder";

const KEY = "11111111-1111-4111-8111-111111111111";
const OTHER = "22222222-2222-4222-8222-222222222222";

function refusal(over: Partial<Refusal> = {}): Refusal {
  return {
    keyId: KEY,
    endpoint: "/v1/messages",
    model: "meter-local-echo",
    status: 429,
    code: "daily_budget_exceeded",
    message: "this API key's daily budget does not cover this request",
    requestId: "req-1",
    at: new Date("2026-11-28T10:00:00.000Z"),
    ...over,
  };
}

function recorder(maxGroups = 1_000, fail = () => false) {
  const sent: RefusalRecord[][] = [];
  const metrics = new Metrics("gateway-test");
  const r = new RefusalRecorder({
    send: async (batch) => {
      if (fail()) throw new Error("billing-ledger is not reachable");
      sent.push(batch.map((x) => ({ ...x })));
    },
    flushMs: 60_000,
    maxGroups,
    logger: createLogger("refusals-test", "silent"),
    metrics,
  });
  const dropped = async (reason: string) => {
    const { values } = await metrics.registry.getSingleMetric("gateway_refusals_dropped_total")!.get();
    return values.filter((v) => v.labels.reason === reason).reduce((n, v) => n + v.value, 0);
  };
  return { r, sent, dropped };
}

test("identical refusals are one group with a count, first and last times, the latest message and request id", async () => {
  const { r, sent } = recorder();
  r.record(refusal());
  r.record(refusal({ at: new Date("2026-11-28T10:00:05.000Z"), requestId: "req-2" }));
  r.record(refusal({ at: new Date("2026-11-28T10:00:01.000Z"), requestId: "req-late-arrival" }));
  r.record(refusal({ status: 404, code: "model_not_found", model: "nope" }));
  await r.flush();
  expect(sent).toHaveLength(1);
  const [budget, missing] = sent[0]!;
  expect(budget).toMatchObject({ count: 3, first_at: "2026-11-28T10:00:00.000Z", last_at: "2026-11-28T10:00:05.000Z", request_id: "req-2" });
  expect(missing).toMatchObject({ status: 404, code: "model_not_found", model: "nope", count: 1 });
  await r.flush();
  expect(sent).toHaveLength(1);
});

test("one key's refusals naming ever new models keep their own groups up to the hourly bound, then collapse by status and code", async () => {
  const { r, sent } = recorder();
  for (let i = 0; i < 5_000; i++) r.record(refusal({ model: `model-${i}`, ...(i % 2 ? { status: 404, code: "model_not_found" } : {}) }));
  r.record(refusal({ keyId: OTHER }));
  await r.flush();
  const groups = sent.flat();
  const mine = groups.filter((g) => g.key_id === KEY);
  expect(mine).toHaveLength(REFUSAL_ENTRIES_PER_KEY_HOUR + 2);
  expect(
    mine
      .filter((g) => g.model === null)
      .map((g) => g.code)
      .sort(),
  ).toEqual(["daily_budget_exceeded", "model_not_found"]);
  expect(mine.reduce((n, g) => n + g.count, 0)).toBe(5_000);
  expect(groups.filter((g) => g.key_id === OTHER)).toHaveLength(1);
});

test("memory is bounded: past the bound new groups are dropped and counted, repeats of a kept group still count", async () => {
  const { r, sent, dropped } = recorder(100);
  for (let k = 0; k < 150; k++) r.record(refusal({ keyId: `00000000-0000-4000-8000-${String(k).padStart(12, "0")}` }));
  r.record(refusal({ keyId: "00000000-0000-4000-8000-000000000000" }));
  await r.flush();
  expect(sent.flat()).toHaveLength(100);
  expect(sent.flat()[0]!.count).toBe(2);
  expect(await dropped("buffer_full")).toBe(50);
});

test("batches of at most 500; what billing does not take waits for the next flush, collapsing with what came since", async () => {
  let down = true;
  const { r, sent, dropped } = recorder(1_000, () => down);
  for (let k = 0; k < 700; k++) r.record(refusal({ keyId: `00000000-0000-4000-8000-${String(k).padStart(12, "0")}` }));
  await r.flush();
  expect(sent).toHaveLength(0);
  r.record(refusal({ keyId: "00000000-0000-4000-8000-000000000001" }));
  down = false;
  await r.flush();
  expect(sent.map((b) => b.length)).toEqual([500, 200]);
  expect(sent.flat().find((g) => g.key_id.endsWith("000000000001"))!.count).toBe(2);
  expect(await dropped("not_sent")).toBe(0);
});

test("during a billing outage the buffer stays bounded: groups that no longer fit are dropped and counted", async () => {
  const key = (k: number) => `00000000-0000-4000-8000-${String(k).padStart(12, "0")}`;
  let whileSending = () => undefined as void;
  const { r, dropped } = recorder(100, () => (whileSending(), true));
  for (let k = 0; k < 100; k++) r.record(refusal({ keyId: key(k) }));
  // New ones arrive while the failing batch is out: the batch does not all fit back in.
  whileSending = () => {
    whileSending = () => undefined;
    for (let k = 100; k < 130; k++) r.record(refusal({ keyId: key(k) }));
  };
  await r.flush();
  expect(await dropped("not_sent")).toBe(30);
  // Further new ones find the buffer full.
  for (let k = 200; k < 210; k++) r.record(refusal({ keyId: key(k) }));
  expect(await dropped("buffer_full")).toBe(10);
});
