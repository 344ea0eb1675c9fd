import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { FilesConfig, loadApiConfig, loadConfig, publicBaseUrlOf } from "./config";

const KEYS = { INTERNAL_SIGNING_KEY: "x".repeat(40), INTERNAL_PUBLIC_KEYS: "x".repeat(40) };

describe("where upload links point", () => {
  it("refuses to start the API in production without PUBLIC_BASE_URL", () => {
    expect(() => loadApiConfig({ ...KEYS, NODE_ENV: "production" })).toThrow(/PUBLIC_BASE_URL: required in production/);
    expect(() => loadApiConfig({ ...KEYS, NODE_ENV: "production", PUBLIC_BASE_URL: "" })).toThrow(/PUBLIC_BASE_URL/);
  });

  it("uses PUBLIC_BASE_URL in production", () => {
    const config = loadApiConfig({ ...KEYS, NODE_ENV: "production", PUBLIC_BASE_URL: "https://api.example.com", GATEWAY_URL: "http://gateway:8080" });
    expect(publicBaseUrlOf(config)).toBe("https://api.example.com");
  });

  it("lets the worker, which builds no links, start in production without it", () => {
    expect(loadConfig({ ...KEYS, NODE_ENV: "production" }).PUBLIC_BASE_URL).toBeUndefined();
  });

  it("points at the local gateway outside production: GATEWAY_URL, else its default port", () => {
    expect(publicBaseUrlOf(loadApiConfig({ ...KEYS, NODE_ENV: "test", GATEWAY_URL: "http://127.0.0.1:40123" }))).toBe("http://127.0.0.1:40123");
    expect(publicBaseUrlOf(loadApiConfig({ ...KEYS }))).toBe("http://127.0.0.1:8080");
  });
});

describe("image and stream limits", () => {
  it("defaults to 100 000 000 pixels and clamd's 50 MiB stream limit", () => {
    const config = loadConfig({ ...KEYS });
    expect(config.MAX_IMAGE_PIXELS).toBe(100_000_000);
    expect(config.CLAMD_STREAM_MAX_BYTES).toBe(50 * 1024 * 1024);
    expect(config.MAX_FILE_BYTES).toBeLessThanOrEqual(config.CLAMD_STREAM_MAX_BYTES);
  });
});

it("none of files's settings can be read as an upstream key, whatever UPSTREAM_KEY_ENV_PATTERN admits", () => {
  for (const name of Object.keys(FilesConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
});
