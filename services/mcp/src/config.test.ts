import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { loadConfig, McpConfig, publicBaseUrlOf } from "./config";

const KEYS = { INTERNAL_SIGNING_KEY: "k".repeat(40), INTERNAL_PUBLIC_KEYS: "p".repeat(40) };

describe("MCP settings", () => {
  it("default to the spec's limits and the local topology", () => {
    expect(loadConfig(KEYS)).toMatchObject({
      MCP_PORT: 8085,
      MCP_DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/meter_mcp",
      GATEWAY_URL: "http://127.0.0.1:8080",
      MCP_BODY_LIMIT_BYTES: 64 * 1024,
      MCP_RESULT_LIMIT_BYTES: 512 * 1024,
      MCP_MAX_ACTIVE_CALLS_PER_PROCESS: 4,
      MCP_MAX_ACTIVE_CALLS_PER_ORGANIZATION: 2,
    });
  });

  it("refuse a bad value, naming it", () => {
    expect(() => loadConfig({ ...KEYS, MCP_LEASE_TTL_MS: "10", GATEWAY_URL: "not a url" })).toThrow(
      /MCP_LEASE_TTL_MS[\s\S]*GATEWAY_URL|GATEWAY_URL[\s\S]*MCP_LEASE_TTL_MS/,
    );
  });
});

describe("where result links point", () => {
  it("refuses to start in production without PUBLIC_BASE_URL", () => {
    expect(() => loadConfig({ ...KEYS, NODE_ENV: "production" })).toThrow(/PUBLIC_BASE_URL: required in production/);
  });

  it("is PUBLIC_BASE_URL when set, else the gateway", () => {
    expect(publicBaseUrlOf(loadConfig({ ...KEYS, NODE_ENV: "production", PUBLIC_BASE_URL: "https://api.example.com/" }))).toBe("https://api.example.com");
    expect(publicBaseUrlOf(loadConfig({ ...KEYS, GATEWAY_URL: "http://127.0.0.1:40123" }))).toBe("http://127.0.0.1:40123");
  });
});

it("none of mcp's settings can be read as an upstream key, whatever UPSTREAM_KEY_ENV_PATTERN admits", () => {
  for (const name of Object.keys(McpConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
});
