import { DEFAULT_UPSTREAM_KEY_ENV_PATTERN, upstreamKeyEnvRefusal } from "./upstream-key-env";

const pattern = new RegExp(DEFAULT_UPSTREAM_KEY_ENV_PATTERN);
/** A pattern widened to admit every name: the families below are refused all the same. */
const anything = /^.*$/;

describe("upstreamKeyEnvRefusal", () => {
  it("admits upstream key names", () => {
    for (const name of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "VLLM_PROD_API_KEY", "MISTRAL_API_KEY"]) {
      expect(upstreamKeyEnvRefusal(name, pattern)).toBeUndefined();
      expect(upstreamKeyEnvRefusal(name, anything)).toBeUndefined();
    }
  });

  it("refuses names outside the pattern", () => {
    expect(upstreamKeyEnvRefusal("HOME", pattern)).toMatch(/does not match UPSTREAM_KEY_ENV_PATTERN/);
  });

  // Each family the rule refuses, by a name of it; each is refused whatever the pattern admits.
  it.each([
    [
      "each service's own settings",
      ["TEXT_DATABASE_URL", "TEXT_SYNC_TIMEOUT_MS", "BILLING_LEDGER_PORT", "MEDIA_JOBS_WORKER_PORT", "FILES_UPLOAD_SECRET", "MCP_URL"],
    ],
    ["a deployable's settings named like an API key", ["GATEWAY_API_KEY", "TEXT_API_KEY", "MCP_API_KEY"]],
    [
      "each deployable's broker password",
      ["TEXT_BROKER_PASSWORD", "FILES_WORKER_BROKER_PASSWORD", "BILLING_LEDGER_BROKER_PASSWORD", "GATEWAY_BROKER_PASSWORD"],
    ],
    ["the broker's", ["RABBITMQ_URL", "RABBITMQ_PASSWORD", "RABBITMQ_DEFAULT_PASS", "RABBITMQ_API_KEY"]],
    ["PostgreSQL's", ["PGPASSWORD", "PGUSER", "PG_API_KEY", "POSTGRES_PASSWORD"]],
    ["database URLs", ["DATABASE_URL", "TEXT_MIGRATION_DATABASE_URL", "SHADOW_DATABASE_URL_API_KEY", "DATABASE_POOL_SIZE"]],
    ["internal keys", ["INTERNAL_SIGNING_KEY", "INTERNAL_PUBLIC_KEYS", "INTERNAL_API_KEY"]],
    ["billing's grant keys", ["GRANT_SIGNING_KEY", "GRANT_PUBLIC_KEYS"]],
    ["the admin token", ["ADMIN_TOKEN", "ADMIN_API_KEY"]],
    [
      "Redis, the object store, clamd",
      ["REDIS_URL", "REDIS_API_KEY", "OBJECT_STORE_SECRET_KEY", "OBJECT_STORE_ACCESS_KEY", "MINIO_ROOT_PASSWORD", "CLAMD_HOST"],
    ],
    ["secrets by their ending", ["SOME_SERVICE_TOKEN", "WEBHOOK_SIGNING_SECRET", "ANY_SECRET_KEY", "OTHER_PASSWORD", "S3_ACCESS_KEY", "SOME_BASE_URL"]],
    [
      "the services' shared settings",
      ["HOST", "NODE_ENV", "LOG_LEVEL", "UPSTREAM_KEY_ENV_PATTERN", "UPSTREAM_TIMEOUT_MS", "HOLD_EXPIRY_HOURS", "CABINET_SESSION_TTL_HOURS"],
    ],
  ])("refuses %s, even when a wider pattern admits them", (_family, names) => {
    for (const name of names) expect([name, upstreamKeyEnvRefusal(name, anything)]).toEqual([name, expect.stringMatching(/one of this system's own settings/)]);
  });
});
