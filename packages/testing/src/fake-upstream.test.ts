import { startFakeUpstream, type FakeUpstream } from "./fake-upstream";

let fake: FakeUpstream;
beforeAll(async () => {
  fake = await startFakeUpstream();
});
afterEach(() => fake.reset());
afterAll(() => fake.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(fake.url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

const anthropicBody = (text: string, max_tokens = 100) => ({
  model: "claude-test",
  max_tokens,
  system: "be brief",
  messages: [{ role: "user", content: text }],
});

describe("fake upstream: wire protocols", () => {
  it("exposes the base URLs as the vendor SDKs expect them", () => {
    expect(fake.anthropicBaseUrl).toBe(fake.url);
    expect(fake.openaiBaseUrl).toBe(`${fake.url}/v1`);
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("answers the Messages API with a full message and usage counted from the texts", async () => {
    const res = await post("/v1/messages", anthropicBody("hello"));
    expect(res.status).toBe(200);
    expect(res.headers.get("request-id")).toMatch(/^req_/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [{ type: "text", text: "Fake reply to: hello" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: Math.ceil(Buffer.byteLength("be briefhello") / 4),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: Math.ceil(Buffer.byteLength("Fake reply to: hello") / 4),
        service_tier: "standard",
      },
    });
  });

  it("answers Chat Completions, honouring max_tokens with finish_reason length", async () => {
    const res = await post("/v1/chat/completions", { model: "gpt-test", max_tokens: 3, messages: [{ role: "user", content: "a long question" }] });
    const body = (await res.json()) as {
      object: string;
      choices: { message: { content: string }; finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    expect(body.object).toBe("chat.completion");
    expect(body.choices[0]).toMatchObject({ message: { role: "assistant", content: "Fake reply t" }, finish_reason: "length" });
    expect(body.usage.completion_tokens).toBe(3);
  });

  it("answers the Responses API, incomplete when max_output_tokens cuts the answer", async () => {
    const res = await post("/v1/responses", {
      model: "gpt-test",
      input: [{ role: "user", content: "x".repeat(100) }],
      instructions: "hi",
      max_output_tokens: 16,
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: "response",
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      instructions: "hi",
      output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: expect.any(String) }] }],
      usage: { output_tokens: 16 },
    });
  });

  it("refuses what the vendor refuses, in the vendor's error shape", async () => {
    const anthropic = await post("/v1/messages", { model: "m", messages: [{ role: "user", content: "x" }] });
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("max_tokens") } });
    const responses = await post("/v1/responses", { model: "m", input: "x", max_output_tokens: 10 });
    expect(responses.status).toBe(400);
    expect(await responses.json()).toMatchObject({ error: { type: "invalid_request_error", message: expect.stringContaining(">= 16") } });
    expect((await post("/v1/nothing", {})).status).toBe(404);
  });

  it("records every call: path, headers, parsed body", async () => {
    await post("/v1/messages", anthropicBody("one"), { "x-api-key": "sk-test" });
    await post("/v1/chat/completions?x=1", { model: "m", messages: [{ role: "user", content: "two" }] });
    expect(fake.callCount()).toBe(2);
    expect(fake.calls[0]).toMatchObject({ method: "POST", path: "/v1/messages", body: anthropicBody("one") });
    expect(fake.calls[0]!.headers["x-api-key"]).toBe("sk-test");
    expect(fake.calls[1]!.path).toBe("/v1/chat/completions");
  });
});

describe("fake upstream: switches", () => {
  it("status answers the vendor's error JSON, or the given body", async () => {
    fake.configure({ status: 529 });
    const res = await post("/v1/messages", anthropicBody("x"));
    expect(res.status).toBe(529);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    fake.configure({ status: 429 });
    const limited = await post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "x" }] });
    expect(limited.headers.get("retry-after")).toBe("1");
    expect(await limited.json()).toMatchObject({ error: { type: "requests", code: "rate_limit_exceeded" } });
    fake.configure({ status: 502, errorBody: "<html>bad gateway</html>" });
    expect(await (await post("/v1/messages", anthropicBody("x"))).text()).toBe("<html>bad gateway</html>");
  });

  it("failTimes fails only the next n calls", async () => {
    fake.configure({ status: 503, failTimes: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post("/v1/messages", anthropicBody("x"))).status);
    expect(statuses).toEqual([503, 503, 200]);
    expect(fake.callCount()).toBe(3);
  });

  it("usage: missing, inflated, negative", async () => {
    const usageOf = async () => ((await (await post("/v1/messages", anthropicBody("x"))).json()) as { usage?: unknown }).usage;
    fake.configure({ usage: "missing" });
    expect(await usageOf()).toBeUndefined();
    fake.configure({ usage: "inflated" });
    expect(await usageOf()).toMatchObject({ input_tokens: 1_000_000, output_tokens: 1_000_000 });
    fake.configure({ usage: "negative" });
    expect(await usageOf()).toMatchObject({ input_tokens: -1, output_tokens: -10 });
  });

  it("delayMs holds the answer back", async () => {
    fake.configure({ delayMs: 300 });
    const started = Date.now();
    expect((await post("/v1/messages", anthropicBody("x"))).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it("drop before-response: the request is read and recorded, no answer comes", async () => {
    fake.configure({ drop: "before-response", failTimes: 1 });
    await expect(post("/v1/messages", anthropicBody("x"))).rejects.toThrow();
    expect(fake.callCount()).toBe(1);
    expect((await post("/v1/messages", anthropicBody("x"))).status).toBe(200);
  });

  it("drop mid-body: a 200 starts and the connection dies halfway through the body", async () => {
    fake.configure({ drop: "mid-body" });
    const res = await post("/v1/responses", { model: "m", input: "x" });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it("retryAfterS sets the Retry-After of a 429 or 503", async () => {
    fake.configure({ status: 429, retryAfterS: 17 });
    const res = await post("/v1/messages", anthropicBody("slow down"));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("17");
  });

  it("refuseConnections: nothing is accepted (nothing recorded) until it is turned off, on the same port", async () => {
    await fake.refuseConnections(true);
    await expect(post("/v1/messages", anthropicBody("refused"))).rejects.toThrow();
    expect(fake.callCount()).toBe(0);
    await fake.refuseConnections(false);
    expect((await post("/v1/messages", anthropicBody("back"))).status).toBe(200);
  });

  it("reset restores normal answers and forgets the calls", async () => {
    fake.configure({ status: 500, delayMs: 50 });
    await post("/v1/messages", anthropicBody("x"));
    fake.reset();
    expect(fake.callCount()).toBe(0);
    expect((await post("/v1/messages", anthropicBody("x"))).status).toBe(200);
  });
});
