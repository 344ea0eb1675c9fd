import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, FAKE_MODEL, PRICES, startTextStack, type TextStack } from "./support/text-stack";

let s: TextStack;
beforeAll(async () => {
  s = await startTextStack();
});
afterAll(async () => {
  try {
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

const msg = (text: string, extra: Record<string, unknown> = {}) => ({
  model: LOCAL_MODEL,
  max_tokens: 50,
  messages: [{ role: "user", content: text }],
  ...extra,
});
const idem = () => ({ "idempotency-key": randomUUID() });

/** The hold the contract describes: input bytes (+ framing) and max_tokens at the model's prices, rounded up. */
function expectedEstimate(inputTokens: number, maxTokens: number) {
  return Math.ceil((inputTokens * PRICES.input_microrub_per_1k_tokens + maxTokens * PRICES.output_microrub_per_1k_tokens) / 1000);
}

describe("POST /v1/messages", () => {
  it("answers in the message shape, charges exactly the reported usage, and balances the books", async () => {
    const a = await s.account();
    const before = await s.balance(a.organizationId);
    const res = await s.call(a.key, "/v1/messages", msg("hello there"), idem());
    expect(res.status).toBe(200);
    const body = res.json as {
      id: string;
      type: string;
      role: string;
      content: { type: string; text: string }[];
      usage: { input_tokens: number; output_tokens: number };
      stop_reason: string;
      billing: { status: string; estimated_cost_microrub: number; cost_microrub: number };
    };
    expect(body).toMatchObject({ type: "message", role: "assistant", model: LOCAL_MODEL, stop_reason: "end_turn" });
    expect(body.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(body.content).toEqual([{ type: "text", text: expect.stringContaining("hello there") }]);
    const cost = Math.ceil(
      (body.usage.input_tokens * PRICES.input_microrub_per_1k_tokens + body.usage.output_tokens * PRICES.output_microrub_per_1k_tokens) / 1000,
    );
    const inputTokensEstimate = 8 + Buffer.byteLength("hello there") + 4;
    expect(body.billing).toEqual({ status: "settled", estimated_cost_microrub: expectedEstimate(inputTokensEstimate, 50), cost_microrub: cost });
    expect(cost).toBeLessThanOrEqual(body.billing.estimated_cost_microrub);
    const after = await s.settledBalance(a.organizationId);
    expect(after).toMatchObject({ balance_microrub: before.balance_microrub - cost, reserved_microrub: 0 });
  });

  it("accepts content blocks, a system prompt and anthropic-version/compat-version headers", async () => {
    const a = await s.account();
    const res = await s.call(
      a.key,
      "/v1/messages",
      msg("", { system: "be brief", messages: [{ role: "user", content: [{ type: "text", text: "block one" }] }] }),
      { ...idem(), "anthropic-version": "2023-06-01", "compat-version": "2023-06-01" },
    );
    expect(res.status).toBe(200);
  });

  it("accepts the key in x-api-key", async () => {
    const a = await s.account();
    const res = await fetch(`${s.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": a.key, "content-type": "application/json", ...idem() },
      body: JSON.stringify(msg("via x-api-key")),
    });
    expect(res.status).toBe(200);
  });

  it.each([
    ["an unknown field", { top_k: 5 }, "unknown_field"],
    ["stream: true", { stream: true }, "unsupported_parameter"],
    ["a non-text content block", { messages: [{ role: "user", content: [{ type: "image", source: { type: "base64" } }] }] }, "unsupported_parameter"],
    ["a wrong role", { messages: [{ role: "system", content: "x" }] }, "invalid_request"],
    ["max_tokens missing", { max_tokens: undefined }, "invalid_request"],
    ["a fractional max_tokens", { max_tokens: 1.5 }, "invalid_request"],
  ])("refuses %s with 400 before reserving anything", async (_name, patch, code) => {
    const a = await s.account();
    const res = await s.call(a.key, "/v1/messages", { ...msg("x"), ...patch }, idem());
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ type: "error", error: { code, type: "invalid_request_error" } });
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0, balance_microrub: 1_000_000 });
  });

  it("requires an Idempotency-Key", async () => {
    const a = await s.account();
    const res = await s.call(a.key, "/v1/messages", msg("x"));
    expect(res.status).toBe(400);
    expect((res.json.error as { code: string }).code).toBe("idempotency_key_required");
  });

  it("refuses an unknown model (404), a disabled one or one without a text tariff (422 cost_unknown), reserving nothing", async () => {
    const a = await s.account();
    const absent = await s.call(a.key, "/v1/messages", msg("x", { model: "no-such-model" }), idem());
    expect({ status: absent.status, code: (absent.json.error as { code: string }).code }).toEqual({ status: 404, code: "model_not_found" });

    await s.admin("PUT", "/admin/v1/models/off-model", { enabled: false, provider: { kind: "local" }, operations: { text: PRICES } });
    await s.admin("PUT", "/admin/v1/models/ocr-only", {
      enabled: true,
      provider: { kind: "local" },
      operations: { ocr: { unit: "page", price_per_unit_microrub: 5 } },
    });
    await s.text.catalog.refresh();
    for (const model of ["off-model", "ocr-only"]) {
      const res = await s.call(a.key, "/v1/messages", msg("x", { model }), idem());
      expect({ model, status: res.status, code: (res.json.error as { code: string }).code }).toEqual({ model, status: 422, code: "cost_unknown" });
    }
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0, balance_microrub: 1_000_000 });
  });

  it("refuses what the balance or the daily budget cannot cover, and the key stays usable afterwards", async () => {
    const poor = await s.account({ credit: 10 });
    const key = idem();
    const refused = await s.call(poor.key, "/v1/messages", msg("x"), key);
    expect({ status: refused.status, code: (refused.json.error as { code: string }).code }).toEqual({ status: 402, code: "insufficient_balance" });
    // Nothing was reserved, so nothing was kept: after a top-up the same key runs the request.
    await s.admin("POST", `/admin/v1/organizations/${poor.organizationId}/credits`, { amount_microrub: 1_000_000, reference: "topup" });
    expect((await s.call(poor.key, "/v1/messages", msg("x"), key)).status).toBe(200);

    const capped = await s.account({ dailyBudget: 100 });
    const overBudget = await s.call(capped.key, "/v1/messages", msg("x"), idem());
    expect({ status: overBudget.status, code: (overBudget.json.error as { code: string }).code }).toEqual({ status: 429, code: "daily_budget_exceeded" });
  });

  it("prices a model on an upstream by the usage the upstream reports", async () => {
    const a = await s.account();
    const res = await s.call(a.key, "/v1/messages", msg("priced upstream", { model: FAKE_MODEL }), idem());
    expect(res.status).toBe(200);
    const call = s.fake.calls.at(-1)!;
    expect(call.path).toBe("/v1/messages");
    expect(call.body).toMatchObject({ model: "claude-fake-1", max_tokens: 50 });
    expect(call.headers["x-api-key"]).toBe("sk-fake-upstream");
  });
});
