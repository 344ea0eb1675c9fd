import { testKeyEnv } from "@meter/testing";
import { ConfigError } from "@meter/config";
import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { BillingConfig, loadConfig } from "./config";

const base = testKeyEnv("billing-ledger");

it("defaults the hold owners' URLs, the audit's pace and the upstream key pattern", () => {
  const config = loadConfig({ ...base });
  expect(config).toMatchObject({
    TEXT_URL: "http://127.0.0.1:8081",
    MEDIA_JOBS_URL: "http://127.0.0.1:8082",
    HOLD_AUDIT_AFTER_MS: 300_000,
    HOLD_AUDIT_INTERVAL_MS: 60_000,
    BOOKS_CROSS_CHECK_INTERVAL_MS: 600_000,
    HOLD_LOCK_TIMEOUT_MS: 1_000,
  });
  expect(config.UPSTREAM_KEY_ENV_PATTERN.test("OPENAI_API_KEY")).toBe(true);
  expect(config.UPSTREAM_KEY_ENV_PATTERN.test("OPENAI_KEY")).toBe(false);
});

it("takes a pattern from the environment and refuses one that is not a regular expression", () => {
  expect(loadConfig({ ...base, UPSTREAM_KEY_ENV_PATTERN: "^UPSTREAM_[A-Z]+$" }).UPSTREAM_KEY_ENV_PATTERN.source).toBe("^UPSTREAM_[A-Z]+$");
  expect(() => loadConfig({ ...base, UPSTREAM_KEY_ENV_PATTERN: "(" })).toThrow(ConfigError);
  expect(() => loadConfig({ ...base, HOLD_AUDIT_INTERVAL_MS: "0" })).toThrow(/HOLD_AUDIT_INTERVAL_MS/);
  expect(() => loadConfig({ ...base, BOOKS_CROSS_CHECK_INTERVAL_MS: "10" })).toThrow(/BOOKS_CROSS_CHECK_INTERVAL_MS/);
});

it("sizes allowances by a share of what is left, and tells a refusal they caused when to try again", () => {
  expect(loadConfig({ ...base })).toMatchObject({ ALLOWANCE_MAX_SHARE: 0.25, ALLOWANCE_RETRY_AFTER_S: 5 });
  expect(loadConfig({ ...base, ALLOWANCE_MAX_SHARE: "0.1", ALLOWANCE_RETRY_AFTER_S: "3" })).toMatchObject({
    ALLOWANCE_MAX_SHARE: 0.1,
    ALLOWANCE_RETRY_AFTER_S: 3,
  });
  // More than all of what is left, or nothing at all, is no share.
  expect(() => loadConfig({ ...base, ALLOWANCE_MAX_SHARE: "1.5" })).toThrow(/ALLOWANCE_MAX_SHARE/);
  expect(() => loadConfig({ ...base, ALLOWANCE_MAX_SHARE: "0" })).toThrow(/ALLOWANCE_MAX_SHARE/);
  expect(() => loadConfig({ ...base, ALLOWANCE_RETRY_AFTER_S: "0" })).toThrow(/ALLOWANCE_RETRY_AFTER_S/);
});

it("none of billing-ledger's settings can be read as an upstream key, whatever UPSTREAM_KEY_ENV_PATTERN admits", () => {
  for (const name of Object.keys(BillingConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
});
