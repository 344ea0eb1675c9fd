import { randomUUID } from "node:crypto";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { LOCAL_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";

/** The official clients only change baseURL and the key, and add an Idempotency-Key per request. */
let sut: SystemUnderTest;
let account: { key: string; organizationId: string };
beforeAll(async () => {
  sut = await startSystemUnderTest();
  account = await sut.account();
}, 120_000);
afterAll(async () => {
  await sut.assertBooksBalance();
  await sut.close();
});

describe("@anthropic-ai/sdk", () => {
  const client = () => new Anthropic({ apiKey: account.key, baseURL: sut.url, maxRetries: 0 });

  it("creates a message and sees usage and billing", async () => {
    const message = await client().messages.create(
      { model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content: "Hello, Claude" }] },
      { headers: { "Idempotency-Key": randomUUID() } },
    );
    expect(message.type).toBe("message");
    expect(message.content[0]).toMatchObject({ type: "text" });
    expect(message.content[0]!.type === "text" && message.content[0]!.text).toContain("Hello, Claude");
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    const billing = (message as unknown as { billing: { status: string; cost_microrub: number } }).billing;
    expect(billing.status).toBe("settled");
    expect(billing.cost_microrub).toBeGreaterThan(0);
  });

  it("surfaces our errors as the SDK's typed errors", async () => {
    const err = await client()
      .messages.create(
        { model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content: "x" }], stream: true },
        { headers: { "Idempotency-Key": randomUUID() } },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(400);

    const noKey = await new Anthropic({ apiKey: "mtr_wrong", baseURL: sut.url, maxRetries: 0 }).messages
      .create({ model: LOCAL_MODEL, max_tokens: 8, messages: [{ role: "user", content: "x" }] }, { headers: { "Idempotency-Key": randomUUID() } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(noKey).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it("lists models and retrieves one", async () => {
    const page = await client().models.list();
    expect(page.data.map((m) => m.id)).toContain(LOCAL_MODEL);
    expect(await client().models.retrieve(LOCAL_MODEL)).toMatchObject({ id: LOCAL_MODEL, type: "model" });
    const missing = await client()
      .models.retrieve("no-such-model")
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it("reports our request id as the SDK's own", async () => {
    const message = await client().messages.create(
      { model: LOCAL_MODEL, max_tokens: 16, messages: [{ role: "user", content: "id?" }] },
      { headers: { "Idempotency-Key": randomUUID() } },
    );
    expect(message._request_id).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it("does not retry on its own a call the daily budget refuses", async () => {
    const capped = await sut.account({ dailyBudget: 10 });
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    // The SDK's default: two retries of a 429, unless the answer says not to.
    const err = await new Anthropic({ apiKey: capped.key, baseURL: sut.url, fetch: counting }).messages
      .create({ model: LOCAL_MODEL, max_tokens: 64, messages: [{ role: "user", content: "x" }] }, { headers: { "Idempotency-Key": randomUUID() } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { code: "daily_budget_exceeded" } });
    expect(calls).toBe(1);
  });
});

describe("openai", () => {
  const client = () => new OpenAI({ apiKey: account.key, baseURL: `${sut.url}/v1`, maxRetries: 0 });

  it("creates a response; output_text works", async () => {
    const response = await client().responses.create(
      { model: LOCAL_MODEL, input: "Say something metered", max_output_tokens: 40 },
      { headers: { "Idempotency-Key": randomUUID() } },
    );
    expect(response.status).toBe("completed");
    expect(response.output_text).toContain("Say something metered");
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
  });

  it("replays with the same Idempotency-Key and refuses another body under it", async () => {
    const key = randomUUID();
    const first = await client().responses.create({ model: LOCAL_MODEL, input: "same" }, { headers: { "Idempotency-Key": key } });
    const again = await client().responses.create({ model: LOCAL_MODEL, input: "same" }, { headers: { "Idempotency-Key": key } });
    expect(again.id).toBe(first.id);
    const mismatch = await client()
      .responses.create({ model: LOCAL_MODEL, input: "different" }, { headers: { "Idempotency-Key": key } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(mismatch).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((mismatch as InstanceType<typeof OpenAI.APIError>).code).toBe("idempotency_key_mismatch");
  });

  it("lists models and retrieves one", async () => {
    const ids: string[] = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(ids).toContain(LOCAL_MODEL);
    expect(await client().models.retrieve(LOCAL_MODEL)).toMatchObject({ id: LOCAL_MODEL, object: "model", owned_by: "meter" });
  });
});
