import { createProvider } from "../../src/providers";
const NO_KEYS = { get: () => undefined };

describe("createProvider", () => {
  it("builds the adapter the catalog's provider.kind names", async () => {
    const local = createProvider({ kind: "local" }, NO_KEYS);
    await expect(local.complete({ model: "m", messages: [{ role: "user", text: "hi" }], maxTokens: 10 }, { timeoutMs: 1000 })).resolves.toMatchObject({
      text: "Echo: hi",
    });
    for (const kind of ["anthropic", "openai-chat", "openai-responses"] as const) {
      expect(typeof createProvider({ kind, base_url: "http://127.0.0.1:1" }, NO_KEYS).complete).toBe("function");
    }
  });

  it("a kind this build does not know (an old stored plan) fails not_sent", async () => {
    const provider = createProvider({ kind: "retired-kind" } as unknown as Parameters<typeof createProvider>[0], NO_KEYS);
    await expect(provider.complete({ model: "m", messages: [], maxTokens: 1 }, { timeoutMs: 1000 })).rejects.toMatchObject({ kind: "not_sent" });
  });

  it("throws nothing but UpstreamError from complete, even for a base_url that is not a URL", async () => {
    const provider = createProvider({ kind: "openai-chat", base_url: "not a url" }, NO_KEYS);
    await expect(provider.complete({ model: "m", messages: [], maxTokens: 1 }, { timeoutMs: 1000 })).rejects.toMatchObject({
      name: "UpstreamError",
      kind: "not_sent",
    });
  });
});
