import { randomUUID } from "node:crypto";
import { LOCAL_MODEL, PRICES, eventually, startTextStack, type TextStack } from "./support/text-stack";

let s: TextStack;
beforeAll(async () => {
  // The periodic catalog refresh at its slowest, so a change seen sooner came over the bus.
  s = await startTextStack({ env: { CATALOG_REFRESH_MS: "4000" } });
});
afterAll(async () => {
  try {
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

describe("POST /v1/responses", () => {
  it("answers in the Responses shape with usage and billing", async () => {
    const a = await s.account();
    const res = await s.call(
      a.key,
      "/v1/responses",
      { model: LOCAL_MODEL, input: "what is metering?", instructions: "answer briefly", max_output_tokens: 30, metadata: { ticket: "42" } },
      { "idempotency-key": randomUUID() },
    );
    expect(res.status).toBe(200);
    const body = res.json as {
      id: string;
      object: string;
      created_at: number;
      status: string;
      output: { type: string; role: string; content: { type: string; text: string; annotations: unknown[] }[] }[];
      usage: { input_tokens: number; output_tokens: number; total_tokens: number };
      billing: { status: string; cost_microrub: number };
    };
    expect(body).toMatchObject({ object: "response", status: "completed", model: LOCAL_MODEL });
    expect(body.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(Math.abs(body.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(body.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed" });
    expect(body.output[0]!.content[0]).toMatchObject({ type: "output_text", annotations: [] });
    expect(body.output[0]!.content[0]!.text).toContain("what is metering?");
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);
    expect(body.billing.status).toBe("settled");
  });

  it("takes input as a list of messages, system and developer included", async () => {
    const a = await s.account();
    const res = await s.call(
      a.key,
      "/v1/responses",
      {
        model: LOCAL_MODEL,
        input: [
          { role: "developer", content: "be terse" },
          { role: "user", content: [{ type: "input_text", text: "first" }] },
          { type: "message", role: "assistant", content: "ok" },
          { role: "user", content: "second" },
        ],
      },
      { "idempotency-key": randomUUID() },
    );
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.json.output)).toContain("second");
  });

  it("refuses unknown fields and streaming before reserving", async () => {
    const a = await s.account();
    const unknown = await s.call(a.key, "/v1/responses", { model: LOCAL_MODEL, input: "x", tools: [] }, { "idempotency-key": randomUUID() });
    expect((unknown.json.error as { code: string }).code).toBe("unknown_field");
    const stream = await s.call(a.key, "/v1/responses", { model: LOCAL_MODEL, input: "x", stream: true }, { "idempotency-key": randomUUID() });
    expect({ status: stream.status, code: (stream.json.error as { code: string }).code }).toEqual({ status: 400, code: "unsupported_parameter" });
    expect((await s.balance(a.organizationId)).reserved_microrub).toBe(0);
  });
});

describe("a conversation of instructions only", () => {
  it("is 400 invalid_request before reserving (no upstream takes it), and so is its quote", async () => {
    const a = await s.account();
    const input = [
      { role: "system", content: "be brief" },
      { role: "developer", content: "no turns" },
    ];
    const res = await s.call(a.key, "/v1/responses", { model: LOCAL_MODEL, instructions: "x", input }, { "idempotency-key": randomUUID() });
    expect({ status: res.status, code: (res.json.error as { code: string }).code }).toEqual({ status: 400, code: "invalid_request" });
    const quote = await s.call(a.key, "/v1/chat/quote", { model: LOCAL_MODEL, messages: [{ role: "system", content: "be brief" }] });
    expect({ status: quote.status, code: (quote.json.error as { code: string }).code }).toEqual({ status: 400, code: "invalid_request" });
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0, balance_microrub: 1_000_000 });
  });
});

describe("a catalog change", () => {
  it("reaches the text service within a second: billing announces it on the bus", async () => {
    const a = await s.account();
    const id = `announced-${randomUUID().slice(0, 8)}`;
    const quote = () => s.call(a.key, "/v1/chat/quote", { model: id, messages: [{ role: "user", content: "x" }], max_tokens: 10 });
    const put = (input: number) =>
      s.admin("PUT", `/admin/v1/models/${id}`, {
        enabled: true,
        provider: { kind: "local" },
        operations: { text: { input_microrub_per_1k_tokens: input, output_microrub_per_1k_tokens: 1_000 } },
      });
    await put(1_000);
    await eventually(async () => (await quote()).status === 200, 5_000, "the new model to be known");
    const before = (await quote()).json.estimated_cost_microrub as number;
    await put(1_000_000);
    const changedAt = Date.now();
    await eventually(async () => (await quote()).json.estimated_cost_microrub !== before, 5_000, "the new tariff");
    // The periodic refresh of this stack is 4 s: a change seen within 1 s came over the bus.
    expect(Date.now() - changedAt).toBeLessThan(1_000);
  });
});

describe("POST /v1/chat/quote", () => {
  const messages = [
    { role: "system", content: "be brief" },
    { role: "user", content: "quote me" },
  ];

  it("gives the estimate a request would be held at, without a hold, a model call or a record", async () => {
    const a = await s.account();
    const calls = s.fake.callCount();
    const quote = await s.call(a.key, "/v1/chat/quote", { model: LOCAL_MODEL, messages, max_tokens: 100 });
    expect(quote.status).toBe(200);
    const inputTokens = 8 + Buffer.byteLength("be brief") + 4 + Buffer.byteLength("quote me") + 4;
    expect(quote.json).toMatchObject({
      object: "quote",
      model: LOCAL_MODEL,
      input_tokens: inputTokens,
      max_output_tokens: 100,
      valid_for_s: 30,
      estimated_cost_microrub: Math.ceil((inputTokens * PRICES.input_microrub_per_1k_tokens + 100 * PRICES.output_microrub_per_1k_tokens) / 1000),
    });
    const expiresIn = new Date(quote.json.expires_at as string).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(25_000);
    expect(expiresIn).toBeLessThanOrEqual(30_000);
    expect(s.fake.callCount()).toBe(calls);
    expect(await s.settledBalance(a.organizationId)).toMatchObject({ reserved_microrub: 0, balance_microrub: 1_000_000 });

    // The same request through /v1/messages is held at exactly the quoted amount, and its body, quoted
    // as it is, gets the same estimate.
    const messagesBody = { model: LOCAL_MODEL, system: "be brief", max_tokens: 100, temperature: 0.2, messages: [{ role: "user", content: "quote me" }] };
    const real = await s.call(a.key, "/v1/messages", messagesBody, { "idempotency-key": randomUUID() });
    expect((real.json.billing as { estimated_cost_microrub: number }).estimated_cost_microrub).toBe(quote.json.estimated_cost_microrub);
    const quotedAsSent = await s.call(a.key, "/v1/chat/quote", messagesBody);
    expect(quotedAsSent.json.estimated_cost_microrub).toBe(quote.json.estimated_cost_microrub);
  });

  it("refuses when max_cost_microrub is below the estimate (422 max_cost_exceeded)", async () => {
    const a = await s.account();
    const res = await s.call(a.key, "/v1/chat/quote", { model: LOCAL_MODEL, messages, max_tokens: 100, max_cost_microrub: 1 });
    expect({ status: res.status, code: (res.json.error as { code: string }).code }).toEqual({ status: 422, code: "max_cost_exceeded" });
  });

  it("fails for an unknown model and for unsupported parameters", async () => {
    const a = await s.account();
    expect((await s.call(a.key, "/v1/chat/quote", { model: "nope", messages })).status).toBe(404);
    const codeOf = async (extra: Record<string, unknown>) => {
      const res = await s.call(a.key, "/v1/chat/quote", { model: LOCAL_MODEL, messages, ...extra });
      return `${res.status} ${(res.json.error as { code: string }).code}`;
    };
    expect(await codeOf({ top_k: 5 })).toBe("400 unknown_field");
    expect(await codeOf({ temperature: 3 })).toBe("400 invalid_request");
    expect(await codeOf({ stream: true })).toBe("400 unsupported_parameter");
  });

  it("takes the key in x-api-key and needs the text scope", async () => {
    const a = await s.account({ scopes: ["images"] });
    const res = await fetch(`${s.url}/v1/chat/quote`, {
      method: "POST",
      headers: { "x-api-key": a.key, "content-type": "application/json" },
      body: JSON.stringify({ model: LOCAL_MODEL, messages }),
    });
    expect(res.status).toBe(403);
  });
});
