import { Provider } from "./catalog";

describe("a provider's base_url", () => {
  it("is an http(s) URL, loopback and private hosts included", () => {
    for (const url of ["https://api.anthropic.com", "http://127.0.0.1:11434/v1", "http://vllm.inference.svc:8000"])
      expect(Provider.safeParse({ kind: "openai-chat", base_url: url }).success).toBe(true);
  });

  it("refuses any other scheme: the catalog cannot point an upstream call at a file or another protocol", () => {
    for (const url of ["file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1:6379/_INFO", "javascript:alert(1)", "not a url"]) {
      const parsed = Provider.safeParse({ kind: "openai-chat", base_url: url });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.message).toBe("must be an http(s) URL");
    }
  });
});
