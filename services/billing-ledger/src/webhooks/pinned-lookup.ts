import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { lookup as dnsLookupAll } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import { isPublicAddress } from "./public-address";

/** A resolved address that a webhook may not reach (carries the code the sender reports). */
export class AddressNotAllowedError extends Error {
  readonly code = "EWEBHOOKADDRESS";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, not a public address`);
  }
}

/**
 * The DNS lookup of a webhook connection: the socket connects to the very addresses checked here, so a
 * name that resolves to a public address at registration and to a private one later (DNS rebinding) is
 * refused at the connection. Any non-public address among a name's answers refuses the name.
 */
export function pinnedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      const refused = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
      if (refused) return callback(new AddressNotAllowedError(hostname, refused.address), "", 0);
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Every address a host resolves to now (an IP literal is its own), for the check at registration. */
export async function resolveAll(host: string): Promise<string[]> {
  return (await dnsLookupAll(host, { all: true })).map((a) => a.address);
}
