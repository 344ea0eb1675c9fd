import { isIPv4, isIPv6 } from "node:net";

/**
 * The address a sign-in is counted under. An IPv6 client usually holds a whole /64 (and can pick any
 * address in it), so its attempts count under that prefix; an IPv4-mapped address counts as the IPv4
 * address it is. Anything else (a test's label) is counted as given.
 */
export function throttleAddress(address: string): string {
  const plain = address.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(plain)) return plain;
  return `${expandIPv6(plain).slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, without leading zeros (a trailing IPv4 part converted). */
function expandIPv6(address: string): string[] {
  const withoutZone = address.split("%")[0]!;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(withoutZone);
  const hex = v4 ? withoutZone.slice(0, v4.index) + [((+v4[1]! << 8) | +v4[2]!).toString(16), ((+v4[3]! << 8) | +v4[4]!).toString(16)].join(":") : withoutZone;
  const [head, tail] = hex.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill("0");
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}
