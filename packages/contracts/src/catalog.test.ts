import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN, Provider, upstreamKeyEnvRefusal } from "./catalog";

const pattern = new RegExp(DEFAULT_UPSTREAM_KEY_ENV_PATTERN);

describe("upstreamKeyEnvRefusal", () => {
  it("admits upstream key names", () => {
    for (const name of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "VLLM_PROD_API_KEY"])
      expect(upstreamKeyEnvRefusal(name, pattern)).toBeUndefined();
  });

  it("refuses names outside the pattern", () => {
    expect(upstreamKeyEnvRefusal("HOME", pattern)).toMatch(/does not match UPSTREAM_KEY_ENV_PATTERN/);
  });

  it("refuses our own settings even when a wider pattern admits them", () => {
    const anything = /^[A-Z][A-Z0-9_]*$/;
    for (const name of [
      "INTERNAL_SIGNING_KEY",
      "INTERNAL_SECRET",
      "ADMIN_TOKEN",
      "RABBITMQ_URL",
      "TEXT_DATABASE_URL",
      "BILLING_LEDGER_DATABASE_URL",
      "OBJECT_STORE_SECRET_KEY",
      "FILES_UPLOAD_SECRET",
      "MEDIA_JOBS_WORKER_PORT",
      "POSTGRES_PASSWORD",
      "PGPASSWORD",
      "MINIO_ROOT_PASSWORD",
      "SOME_SERVICE_TOKEN",
    ]) {
      expect(upstreamKeyEnvRefusal(name, anything)).toMatch(/one of this system's own settings/);
    }
    expect(upstreamKeyEnvRefusal("MISTRAL_API_KEY", anything)).toBeUndefined();
  });
});

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
