import { KEY, KEY_ENV, describeRemoteFailures, remoteHarness, request, type RemoteCase } from "./remote-chat.cases";

const anthropic: RemoteCase = { kind: "anthropic", path: "/v1/messages", baseUrl: (origin) => origin, minMaxTokens: 1 };
const h = remoteHarness(anthropic);
const tokens = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);

describe("anthropic adapter", () => {
  it("posts the Messages body with x-api-key and anthropic-version, and maps the answer", async () => {
    const result = await h.provider().complete(
      request("hello", {
        system: "be brief",
        temperature: 0.2,
        maxTokens: 50,
        messages: [
          { role: "user", text: "hi" },
          { role: "assistant", text: "yes?" },
          { role: "user", text: "hello" },
        ],
      }),
      {
        timeoutMs: 5_000,
      },
    );
    const call = h.fake.calls[0]!;
    expect(call.path).toBe("/v1/messages");
    expect(call.headers["x-api-key"]).toBe(KEY);
    expect(call.headers["anthropic-version"]).toBe("2023-06-01");
    expect(call.headers.authorization).toBeUndefined();
    expect(call.body).toEqual({
      model: "upstream-model-1",
      max_tokens: 50,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "yes?" },
        { role: "user", content: "hello" },
      ],
      system: "be brief",
      temperature: 0.2,
    });
    expect(result).toEqual({
      text: "Fake reply to: hello",
      stopReason: "end_turn",
      usage: { input_tokens: tokens("be briefhiyes?hello"), output_tokens: tokens("Fake reply to: hello") },
      upstreamId: expect.stringMatching(/^msg_/),
    });
  });

  it("passes maxTokens through exactly, and maps stop_reason max_tokens", async () => {
    const result = await h.provider().complete(request("a question that needs a long answer", { maxTokens: 3 }), { timeoutMs: 5_000 });
    expect((h.fake.calls[0]!.body as { max_tokens: number }).max_tokens).toBe(3);
    expect(result).toMatchObject({ stopReason: "max_tokens", text: "Fake reply t", usage: { output_tokens: 3 } });
  });

  it("omits what was not given: system, temperature, and the key when no api_key_env is configured", async () => {
    await h.provider({ api_key_env: undefined }).complete(request("x"), { timeoutMs: 5_000 });
    const call = h.fake.calls[0]!;
    expect(call.headers["x-api-key"]).toBeUndefined();
    expect(Object.keys(call.body as object).sort()).toEqual(["max_tokens", "messages", "model"]);
  });

  it("appends /v1/messages to a base_url with a trailing slash", async () => {
    await h.provider({ base_url: `${h.fake.anthropicBaseUrl}/` }).complete(request("x"), { timeoutMs: 5_000 });
    expect(h.fake.calls[0]!.path).toBe("/v1/messages");
  });

  it("concatenates text blocks, counts prompt-cache tokens as input, maps other stop reasons to end_turn", async () => {
    h.fake.configure({
      status: 200,
      errorBody: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm", signature: "s" },
          { type: "text", text: "one " },
          { type: "text", text: "two" },
        ],
        stop_reason: "refusal",
        usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: null, output_tokens: 2 },
      },
    });
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toEqual({
      text: "one two",
      stopReason: "end_turn",
      usage: { input_tokens: 15, output_tokens: 2 },
      upstreamId: "msg_1",
    });
  });

  it("looks the API key up at call time", async () => {
    const provider = h.provider();
    h.keys.set(KEY_ENV, "sk-rotated-key");
    try {
      await provider.complete(request("x"), { timeoutMs: 5_000 });
    } finally {
      h.keys.set(KEY_ENV, KEY);
    }
    expect(h.fake.calls[0]!.headers["x-api-key"]).toBe("sk-rotated-key");
  });
});

describeRemoteFailures(anthropic, h);
