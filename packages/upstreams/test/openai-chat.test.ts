import { KEY, describeRemoteFailures, remoteHarness, request, type RemoteCase } from "./remote-chat.cases";

const chat: RemoteCase = { kind: "openai-chat", path: "/v1/chat/completions", baseUrl: (origin) => `${origin}/v1`, minMaxTokens: 1 };
const h = remoteHarness(chat);
const tokens = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);

describe("openai-chat adapter", () => {
  it("posts Chat Completions with a Bearer key, the system text as the first message, and maps the answer", async () => {
    const result = await h.provider().complete(
      request("hello", {
        system: "be brief",
        temperature: 1.5,
        maxTokens: 50,
        messages: [
          { role: "user", text: "hi" },
          { role: "assistant", text: "yes?" },
          { role: "user", text: "hello" },
        ],
      }),
      { timeoutMs: 5_000 },
    );
    const call = h.fake.calls[0]!;
    expect(call.path).toBe("/v1/chat/completions");
    expect(call.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(call.body).toEqual({
      model: "upstream-model-1",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hi" },
        { role: "assistant", content: "yes?" },
        { role: "user", content: "hello" },
      ],
      max_tokens: 50,
      temperature: 1.5,
    });
    expect(result).toEqual({
      text: "Fake reply to: hello",
      stopReason: "end_turn",
      usage: { input_tokens: tokens("be briefhiyes?hello"), output_tokens: tokens("Fake reply to: hello") },
      upstreamId: expect.stringMatching(/^chatcmpl-/),
    });
  });

  it("passes maxTokens through exactly as max_tokens, and maps finish_reason length", async () => {
    const result = await h.provider().complete(request("a question that needs a long answer", { maxTokens: 2 }), { timeoutMs: 5_000 });
    const body = h.fake.calls[0]!.body as Record<string, unknown>;
    expect(body.max_tokens).toBe(2);
    expect(body).not.toHaveProperty("max_completion_tokens");
    expect(result).toMatchObject({ stopReason: "max_tokens", text: "Fake rep", usage: { output_tokens: 2 } });
  });

  it("sends no Authorization header when no api_key_env is configured (a local vLLM, Ollama...)", async () => {
    await h.provider({ api_key_env: undefined }).complete(request("x"), { timeoutMs: 5_000 });
    expect(h.fake.calls[0]!.headers.authorization).toBeUndefined();
    expect(Object.keys(h.fake.calls[0]!.body as object).sort()).toEqual(["max_tokens", "messages", "model"]);
  });

  it("reads null content as empty (or the refusal), and content parts as text", async () => {
    const answer = (message: unknown, finish_reason = "stop") =>
      h.fake.configure({
        status: 200,
        errorBody: { id: "c1", object: "chat.completion", choices: [{ index: 0, message, finish_reason }], usage: { prompt_tokens: 3, completion_tokens: 4 } },
      });
    answer({ role: "assistant", content: null }, "length");
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toMatchObject({ text: "", stopReason: "max_tokens" });
    answer({ role: "assistant", content: null, refusal: "I can't help with that." }, "stop");
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toMatchObject({ text: "I can't help with that.", stopReason: "end_turn" });
    answer(
      {
        role: "assistant",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
      "content_filter",
    );
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toEqual({
      text: "ab",
      stopReason: "end_turn",
      usage: { input_tokens: 3, output_tokens: 4 },
      upstreamId: "c1",
    });
  });

  it("an answer without choices -> unknown", async () => {
    h.fake.configure({ status: 200, errorBody: { id: "c1", object: "chat.completion", choices: [] } });
    await expect(h.provider().complete(request("x"), { timeoutMs: 5_000 })).rejects.toMatchObject({ kind: "unknown" });
  });

  it("usage that is not integers -> undefined", async () => {
    h.fake.configure({
      status: 200,
      errorBody: { choices: [{ message: { content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 1.5, completion_tokens: 2 } },
    });
    expect((await h.provider().complete(request("x"), { timeoutMs: 5_000 })).usage).toBeUndefined();
  });
});

describeRemoteFailures(chat, h);
