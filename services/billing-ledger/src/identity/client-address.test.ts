import { throttleAddress } from "./client-address";

describe("throttleAddress", () => {
  it("counts an IPv6 client under its /64, whatever address of it it picks", () => {
    expect(throttleAddress("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(throttleAddress("2001:0DB8:0001:0002:ffff:ffff:ffff:fffe")).toBe("2001:db8:1:2::/64");
    expect(throttleAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(throttleAddress("::1")).toBe("0:0:0:0::/64");
    expect(throttleAddress("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(throttleAddress("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
  });

  it("counts an IPv4 client under its address, mapped into IPv6 or not", () => {
    expect(throttleAddress("203.0.113.9")).toBe("203.0.113.9");
    expect(throttleAddress("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(throttleAddress("unknown")).toBe("unknown");
  });
});
