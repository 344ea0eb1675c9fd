import { generateInternalKeySet } from "@meter/service-kit";
import { loadConfig } from "./config";

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
    const config = loadConfig({ ...base, UPSTREAM_KEY_ENV_PATTERN: "^(VLLM_TOKEN|INTERNAL_SIGNING_KEY)$", VLLM_TOKEN: "t" });
    expect(config.upstreamKeys.get("VLLM_TOKEN")).toBe("t");
    expect(config.upstreamKeys.get("INTERNAL_SIGNING_KEY")).toBeUndefined();
  });
});
