import { generateInternalKeySet } from "@meter/service-kit";
import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { loadConfig, TextConfig } from "./config";

const keys = generateInternalKeySet();
const base = { INTERNAL_SIGNING_KEY: keys.signingKeys.text, INTERNAL_PUBLIC_KEYS: keys.publicKeys };

describe("upstream keys", () => {
  it("are only variables named like an API key, never one of the service's own settings", () => {
    const config = loadConfig({
      ...base,
      OPENAI_API_KEY: "sk-openai",
      TEXT_DATABASE_URL: "postgresql://secret@db/text",
      RABBITMQ_URL: "amqp://secret@mq",
      UNRELATED: "x",
    });
    expect(config.upstreamKeys.get("OPENAI_API_KEY")).toBe("sk-openai");
    for (const name of ["INTERNAL_SIGNING_KEY", "INTERNAL_PUBLIC_KEYS", "TEXT_DATABASE_URL", "RABBITMQ_URL", "UNRELATED", "PATH"]) {
      expect(config.upstreamKeys.get(name)).toBeUndefined();
    }
  });

  it("follow UPSTREAM_KEY_ENV_PATTERN, and a setting of the service stays out even when it matches", () => {
    const config = loadConfig({ ...base, UPSTREAM_KEY_ENV_PATTERN: "^(VLLM_KEY|INTERNAL_SIGNING_KEY)$", VLLM_KEY: "t" });
    expect(config.upstreamKeys.get("VLLM_KEY")).toBe("t");
    expect(config.upstreamKeys.get("INTERNAL_SIGNING_KEY")).toBeUndefined();
  });

  it("are read by the rule billing's catalog applies: a widened pattern still reads none of this system's settings", () => {
    const secrets = {
      TEXT_BROKER_PASSWORD: "broker",
      RABBITMQ_PASSWORD: "rabbit",
      PGPASSWORD: "pg",
      GATEWAY_API_KEY: "gw",
      ADMIN_TOKEN: "admin",
      GRANT_SIGNING_KEY: "grant",
      BILLING_LEDGER_DATABASE_URL: "postgresql://secret@db/billing",
      REDIS_URL: "redis://:secret@redis",
    };
    const widened = loadConfig({ ...base, ...secrets, UPSTREAM_KEY_ENV_PATTERN: "^.*$", OPENAI_API_KEY: "sk-openai" });
    expect(widened.upstreamKeys.get("OPENAI_API_KEY")).toBe("sk-openai");
    for (const name of Object.keys(secrets)) expect([name, widened.upstreamKeys.get(name)]).toEqual([name, undefined]);
    // GATEWAY_API_KEY matches even the default pattern: it is the gateway's, not an upstream's.
    expect(loadConfig({ ...base, ...secrets }).upstreamKeys.get("GATEWAY_API_KEY")).toBeUndefined();
    // And none of text's own settings: the rule knows every one of them.
    for (const name of Object.keys(TextConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
  });
});
