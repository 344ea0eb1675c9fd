import { KEY, describeRemoteFailures, failureOf, remoteHarness, request, type RemoteCase } from "./remote-chat.cases";

const responses: RemoteCase = { kind: "openai-responses", path: "/v1/responses", baseUrl: (origin) => `${origin}/v1`, minMaxTokens: 16 };
const h = remoteHarness(responses);
const tokens = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);

const answer = (body: Record<string, unknown>) =>
  h.fake.configure({
    status: 200,
    errorBody: { id: "resp_1", object: "response", status: "completed", output: [], usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 }, ...body },
  });

describe("openai-responses adapter", () => {
  it("posts a Responses body (system as instructions) with a Bearer key, and maps the answer", async () => {
    const result = await h.provider().complete(
      request("hello", {
        system: "be brief",
        temperature: 0,
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
    expect(call.path).toBe("/v1/responses");
    expect(call.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(call.body).toEqual({
      model: "upstream-model-1",
      input: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "yes?" },
        { role: "user", content: "hello" },
      ],
      instructions: "be brief",
      max_output_tokens: 50,
      temperature: 0,
    });
    expect(result).toEqual({
      text: "Fake reply to: hello",
      stopReason: "end_turn",
      usage: { input_tokens: tokens("be briefhiyes?hello"), output_tokens: tokens("Fake reply to: hello") },
      upstreamId: expect.stringMatching(/^resp_/),
    });
  });

  it("passes maxTokens through exactly as max_output_tokens, and maps incomplete/max_output_tokens", async () => {
    const result = await h.provider().complete(request("x".repeat(200), { maxTokens: 16 }), { timeoutMs: 5_000 });
    expect((h.fake.calls[0]!.body as { max_output_tokens: number }).max_output_tokens).toBe(16);
    expect(result).toMatchObject({ stopReason: "max_tokens", usage: { output_tokens: 16 } });
    expect(Buffer.byteLength(result.text)).toBe(64);
  });

  it("a max_output_tokens the upstream refuses (OpenAI: below 16) -> rejected, never raised", async () => {
    const err = await failureOf(h.provider().complete(request("x", { maxTokens: 10 }), { timeoutMs: 5_000 }));
    expect({ kind: err.kind, status: err.status }).toEqual({ kind: "rejected", status: 400 });
    expect((h.fake.calls[0]!.body as { max_output_tokens: number }).max_output_tokens).toBe(10);
  });

  it("concatenates output_text parts of message items, skipping reasoning items", async () => {
    answer({
      output: [
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "one ", annotations: [] }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "two", annotations: [] }] },
      ],
    });
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toEqual({
      text: "one two",
      stopReason: "end_turn",
      usage: { input_tokens: 5, output_tokens: 6 },
      upstreamId: "resp_1",
    });
  });

  it("incomplete for another reason (content filter) -> end_turn", async () => {
    answer({ status: "incomplete", incomplete_details: { reason: "content_filter" } });
    expect(await h.provider().complete(request("x"), { timeoutMs: 5_000 })).toMatchObject({ text: "", stopReason: "end_turn" });
  });

  it("a 200 with status failed -> failed; queued or in_progress -> unknown", async () => {
    answer({ status: "failed", error: { code: "server_error", message: "The model failed" } });
    const failed = await failureOf(h.provider().complete(request("x"), { timeoutMs: 5_000 }));
    expect(failed.kind).toBe("failed");
    expect(failed.message).toContain("The model failed");
    answer({ status: "in_progress" });
    expect((await failureOf(h.provider().complete(request("x"), { timeoutMs: 5_000 }))).kind).toBe("unknown");
  });
});

describeRemoteFailures(responses, h);
