import { createProvider } from "../../src/providers";
const NO_KEYS = { get: () => undefined };
import { LOCAL_SLEEP_CAP_MS, localAnswer, localSleepMs } from "../../src/providers/local/local-model";
import { UpstreamError, type ChatRequest } from "@meter/upstreams";

const local = createProvider({ kind: "local" }, NO_KEYS);
const req = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "meter-local-echo",
  messages: [{ role: "user", text }],
  maxTokens: 100,
  ...extra,
});
const tokens = (s: string) => Math.ceil(Buffer.byteLength(s, "utf8") / 4);

describe("local model", () => {
  it("echoes the last user message, counts ceil(bytes / 4) tokens, always reports usage", async () => {
    const request = req("", {
      system: "sys",
      messages: [
        { role: "user", text: "first" },
        { role: "assistant", text: "Echo: first" },
        { role: "user", text: "second" },
      ],
    });
    expect(await local.complete(request, { timeoutMs: 1000 })).toEqual({
      text: "Echo: second",
      stopReason: "end_turn",
      usage: { input_tokens: tokens("sysfirstEcho: firstsecond"), output_tokens: tokens("Echo: second") },
    });
  });

  it("is deterministic: the same request, the same result", async () => {
    const request = req("Привет, мир! 🌍", { system: "s", temperature: 1.7 });
    const results = await Promise.all([1, 2, 3].map(() => local.complete(request, { timeoutMs: 1000 })));
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  });

  it("answers `Echo: ` when there is no user message", async () => {
    expect((await local.complete(req("", { messages: [{ role: "assistant", text: "hi" }] }), { timeoutMs: 1000 })).text).toBe("Echo: ");
  });

  it("cuts the answer to maxTokens on a character boundary and says max_tokens", async () => {
    expect(localAnswer(req("abcdefghij", { maxTokens: 2 }))).toMatchObject({ text: "Echo: ab", stopReason: "max_tokens", usage: { output_tokens: 2 } });
    // "Echo: " is 6 bytes, each Cyrillic letter 2: 8 bytes hold "Echo: " and one letter.
    expect(localAnswer(req("мир", { maxTokens: 2 })).text).toBe("Echo: м");
    // The emoji (4 bytes, two UTF-16 units) is kept whole or not at all.
    expect(localAnswer(req("🌍🌍", { maxTokens: 2 })).text).toBe("Echo: ");
    expect(localAnswer(req("🌍🌍", { maxTokens: 3 })).text).toBe("Echo: 🌍");
  });

  it("never exceeds maxTokens, and says max_tokens exactly when it cut", () => {
    const text = "Съешь же ещё этих мягких французских булок 🥐, да выпей чаю. ".repeat(3);
    for (let maxTokens = 1; maxTokens <= 80; maxTokens++) {
      const r = localAnswer(req(text, { maxTokens }));
      expect(r.usage!.output_tokens).toBeLessThanOrEqual(maxTokens);
      expect(r.usage!.output_tokens).toBe(tokens(r.text));
      expect(`Echo: ${text}`.startsWith(r.text)).toBe(true);
      expect(r.stopReason).toBe(r.text === `Echo: ${text}` ? "end_turn" : "max_tokens");
    }
  });

  it("[[sleep:<ms>]] in the last user message waits that long, then answers (marker echoed verbatim)", async () => {
    const started = Date.now();
    const result = await local.complete(req("slow please [[sleep:300]]"), { timeoutMs: 5_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(result.text).toBe("Echo: slow please [[sleep:300]]");
  });

  it("reads the sleep marker only in the last user message, and caps it at 120000 ms", () => {
    expect(localSleepMs(req("[[sleep:999999999999]]"))).toBe(LOCAL_SLEEP_CAP_MS);
    expect(localSleepMs(req("[[sleep:5]] and [[sleep:7]]"))).toBe(5);
    expect(
      localSleepMs(
        req("x", {
          system: "[[sleep:50]]",
          messages: [
            { role: "user", text: "[[sleep:50]]" },
            { role: "assistant", text: "[[sleep:50]]" },
            { role: "user", text: "go" },
          ],
        }),
      ),
    ).toBe(0);
    expect(localSleepMs(req("[[sleep:-5]] [[sleep:abc]]"))).toBe(0);
  });

  it("a sleep longer than timeoutMs ends unknown at timeoutMs, as a silent upstream would", async () => {
    const started = Date.now();
    await expect(local.complete(req("[[sleep:5000]]"), { timeoutMs: 200 })).rejects.toMatchObject({ kind: "unknown" });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("honours the abort signal: before the call not_sent, during the sleep unknown", async () => {
    await expect(local.complete(req("x"), { timeoutMs: 1000, signal: AbortSignal.abort() })).rejects.toMatchObject({ kind: "not_sent" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const err: unknown = await local.complete(req("[[sleep:5000]]"), { timeoutMs: 10_000, signal: controller.signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe("unknown");
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
