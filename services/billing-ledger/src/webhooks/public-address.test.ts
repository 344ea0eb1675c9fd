import { isPublicAddress } from "./public-address";

test("private, loopback, link-local and other special ranges are not public", () => {
  for (const a of [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
  ]) {
    expect([a, isPublicAddress(a)]).toEqual([a, false]);
  }
  for (const a of ["::1", "::", "fe80::1", "fd00::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "ff02::1", "64:ff9b::7f00:1"]) {
    expect([a, isPublicAddress(a)]).toEqual([a, false]);
  }
  expect(isPublicAddress("not-an-ip")).toBe(false);
});

test("public addresses are public", () => {
  for (const a of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
    expect([a, isPublicAddress(a)]).toEqual([a, true]);
  }
});
