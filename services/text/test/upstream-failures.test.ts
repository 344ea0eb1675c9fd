import { randomUUID } from "node:crypto";
import { FAKE_CHAT_MODEL, FAKE_MODEL, PRICES, eventually, startTextStack, type TextStack } from "./support/text-stack";

// Two tests start a second stack of their own: on a loaded CI machine that alone can take 30 s.
jest.setTimeout(120_000);

let s: TextStack;
beforeAll(async () => {
  s = await startTextStack({ syncTimeoutMs: 1_500, upstreamTimeoutMs: 1_000 });
});
afterEach(() => s.fake.reset());
afterAll(async () => {
  try {
    await eventually(async () => (await s.activeHolds()) === 0, 15_000, "every text hold resolved");
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

const body = (text: string, model = FAKE_MODEL, max_tokens = 40) => ({ model, max_tokens, messages: [{ role: "user", content: text }] });
const errorCode = (json: Record<string, unknown>) => (json.error as { code: string }).code;

describe("upstream failures", () => {
  it("an upstream 4xx (nothing ran) releases the hold: 502 upstream_error with its request id, nothing charged, replayed as stored", async () => {
    const a = await s.account();
    s.fake.configure({ status: 400 });
    const headers = { "idempotency-key": randomUUID() };
    const res = await s.call(a.key, "/v1/messages", body("bad"), headers);
    expect(res.status).toBe(502);
    expect(errorCode(res.json)).toBe("upstream_error");
    // The stored answer names the request that produced it, like every other error.
    expect((res.json.error as { request_id?: string }).request_id).toBe(res.headers.get("x-request-id"));
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
    s.fake.reset();
    const replay = await s.call(a.key, "/v1/messages", body("bad"), headers);
    expect(replay.text).toBe(res.text);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });

  it("a transient 503 is retried and the request succeeds once", async () => {
    const a = await s.account();
    s.fake.configure({ status: 503, failTimes: 1 });
    const res = await s.call(a.key, "/v1/messages", body("flaky"), { "idempotency-key": randomUUID() });
    expect(res.status).toBe(200);
    expect(s.fake.callCount()).toBe(2);
  });

  it("a lasting 5xx ends as 502 with the hold released", async () => {
    const a = await s.account();
    s.fake.configure({ status: 500 });
    const res = await s.call(a.key, "/v1/messages", body("down", FAKE_CHAT_MODEL), { "idempotency-key": randomUUID() });
    expect(res.status).toBe(502);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
  });

  it("never passes an upstream's own error text to the customer", async () => {
    const a = await s.account();
    s.fake.configure({
      status: 400,
      errorBody: { error: { type: "invalid_request_error", message: "internal host db-7.corp.example leaked key sk-live-123" } },
    });
    const res = await s.call(a.key, "/v1/messages", body("leak"), { "idempotency-key": randomUUID() });
    expect(res.status).toBe(502);
    expect(res.text).not.toMatch(/db-7|sk-live|corp\.example/);
    expect((res.json.error as { message: string }).message).toBe("the upstream answered 400; nothing was charged");
  });

  it("a dropped connection (outcome unknown) is pending, keeps the hold, and the retry gets the final answer", async () => {
    const a = await s.account();
    s.fake.configure({ drop: "before-response", failTimes: 1 });
    const headers = { "idempotency-key": randomUUID() };
    const pending = await s.call(a.key, "/v1/messages", body("lost"), headers);
    expect(pending.status).toBe(202);
    expect(pending.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(pending.json).toMatchObject({ type: "pending", billing: { status: "reserved", cost_microrub: null } });
    expect((await s.balance(a.organizationId)).reserved_microrub).toBeGreaterThan(0);

    // The reconciler runs the call again (the upstream now answers) and settles it once.
    let final = pending;
    await eventually(
      async () => {
        final = await s.call(a.key, "/v1/messages", body("lost"), headers);
        return final.status === 200;
      },
      15_000,
      "the pending request to finish",
    );
    expect(final.json).toMatchObject({ billing: { status: "settled" } });
    const cost = (final.json.billing as { cost_microrub: number }).cost_microrub;
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - cost, reserved_microrub: 0 });
  });

  it("an upstream slower than the synchronous window gets 202, and the result is kept for the retry", async () => {
    const slow = await startTextStack({ syncTimeoutMs: 300 });
    try {
      const a = await slow.account();
      slow.fake.configure({ delayMs: 700 });
      const headers = { "idempotency-key": randomUUID() };
      const first = await slow.call(a.key, "/v1/messages", body("slow"), headers);
      expect(first.status).toBe(202);
      expect(first.json).toMatchObject({ type: "pending", status: "in_progress", billing: { status: "reserved" } });
      await eventually(async () => (await slow.call(a.key, "/v1/messages", body("slow"), headers)).status === 200, 10_000, "the slow request");
      expect(slow.fake.callCount()).toBe(1);
      await slow.assertBooksBalance();
    } finally {
      await slow.close();
    }
  });

  it("an upstream that never answers usably is called at most TEXT_MAX_ATTEMPTS times, then 502, nothing charged", async () => {
    const impatient = await startTextStack({ parkBaseMs: 10, syncTimeoutMs: 500, env: { TEXT_MAX_ATTEMPTS: "4" } });
    try {
      const a = await impatient.account();
      impatient.fake.configure({ drop: "before-response" });
      const headers = { "idempotency-key": randomUUID() };
      expect((await impatient.call(a.key, "/v1/messages", body("void"), headers)).status).toBe(202);
      let final = await impatient.call(a.key, "/v1/messages", body("void"), headers);
      await eventually(
        async () => {
          final = await impatient.call(a.key, "/v1/messages", body("void"), headers);
          return final.status !== 202;
        },
        30_000,
        "the request to be given up",
      );
      expect({ status: final.status, code: errorCode(final.json) }).toEqual({ status: 502, code: "upstream_error" });
      expect(impatient.fake.callCount()).toBe(4);
      expect(await impatient.settledBalance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
    } finally {
      await impatient.close();
    }
  });

  it("usage beyond the hold is charged at the hold, never more", async () => {
    const a = await s.account();
    s.fake.configure({ usage: "inflated" });
    const res = await s.call(a.key, "/v1/messages", body("inflate"), { "idempotency-key": randomUUID() });
    expect(res.status).toBe(200);
    const billing = res.json.billing as { estimated_cost_microrub: number; cost_microrub: number };
    expect(billing.cost_microrub).toBe(billing.estimated_cost_microrub);
    expect((await s.settledBalance(a.organizationId)).balance_microrub).toBe(1_000_000 - billing.estimated_cost_microrub);
  });

  it("missing usage is estimated conservatively from the answer", async () => {
    const a = await s.account();
    s.fake.configure({ usage: "missing" });
    const res = await s.call(a.key, "/v1/messages", body("no usage", FAKE_MODEL, 1000), { "idempotency-key": randomUUID() });
    expect(res.status).toBe(200);
    const text = (res.json.content as { text: string }[])[0]!.text;
    const usage = res.json.usage as { input_tokens: number; output_tokens: number };
    expect(usage.output_tokens).toBe(Buffer.byteLength(text));
    const expected = Math.ceil((usage.input_tokens * PRICES.input_microrub_per_1k_tokens + usage.output_tokens * PRICES.output_microrub_per_1k_tokens) / 1000);
    expect((res.json.billing as { cost_microrub: number }).cost_microrub).toBe(expected);
  });
});

describe("billing unreachable once the hold is placed", () => {
  it("does not delay the answer: the settlement is committed with the result and reaches billing over the bus", async () => {
    const a = await s.account();
    s.fake.configure({ delayMs: 400 });
    const headers = { "idempotency-key": randomUUID() };
    const request = s.call(a.key, "/v1/messages", body("handoff"), headers);
    // The request's own hold (the key's allowance, asked for at the same time, is another active hold).
    const requestHoldActive = async () => {
      const held = await s.text.database.pool.query<{ hold_id: string }>("SELECT hold_id FROM text_requests WHERE idempotency_key = $1", [
        headers["idempotency-key"],
      ]);
      const active = await s.stack.admin<{ data: { hold_id: string }[] }>("GET", "/admin/v1/holds?status=active&source=text&limit=500");
      return held.rows.length > 0 && active.data.some((h) => h.hold_id === held.rows[0]!.hold_id);
    };
    await eventually(requestHoldActive, 5_000, "the hold to be placed");
    await s.stopBillingHttp();
    let final;
    try {
      final = await request;
      expect(final.status).toBe(200);
      expect(final.json).toMatchObject({ type: "message", billing: { status: "settled" } });
    } finally {
      await s.startBillingHttp();
    }
    // Settlements only ever travel over the bus: billing applied this one from its queue.
    await eventually(async () => (await s.activeHolds()) === 0, 10_000, "the settlement to arrive over the bus");
    const cost = (final.json.billing as { cost_microrub: number }).cost_microrub;
    expect(await s.balance(a.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - cost, reserved_microrub: 0 });
  });
});
