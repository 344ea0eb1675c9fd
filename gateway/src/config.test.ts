import { ConfigError } from "@meter/config";
import { testKeyEnv } from "@meter/testing";
import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { GatewayConfig, loadConfig } from "./config";

const BASE = { ...testKeyEnv("gateway"), ADMIN_TOKEN: "an-admin-token-long-enough" };

function trustProxy(value: string | undefined) {
  return loadConfig({ ...BASE, ...(value === undefined ? {} : { TRUST_PROXY: value }) }).TRUST_PROXY;
}

describe("TRUST_PROXY", () => {
  it("trusts no proxy unless told", () => {
    expect(trustProxy(undefined)).toBe(false);
    expect(trustProxy("")).toBe(false);
    expect(trustProxy("false")).toBe(false);
    expect(trustProxy("0")).toBe(false);
  });

  it("takes a hop count or the proxies' addresses and CIDRs", () => {
    expect(trustProxy("1")).toBe(1);
    expect(trustProxy("10.0.0.0/8, 192.168.1.7,fd00::/8")).toEqual(["10.0.0.0/8", "192.168.1.7", "fd00::/8"]);
    expect(trustProxy("loopback,uniquelocal")).toEqual(["loopback", "uniquelocal"]);
  });

  it("refuses `true` (any client could name its own address) and what is not an address", () => {
    expect(() => trustProxy("true")).toThrow(ConfigError);
    expect(() => trustProxy("10.0.0.0/33")).toThrow(/not an address: 10\.0\.0\.0\/33/);
    expect(() => trustProxy("ingress.local")).toThrow(/TRUST_PROXY/);
  });
});

it("none of the gateway's settings can be read as an upstream key, whatever UPSTREAM_KEY_ENV_PATTERN admits", () => {
  for (const name of Object.keys(GatewayConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
});
