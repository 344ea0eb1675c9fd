import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** The API key from `Authorization: Bearer`, or from `x-api-key` where the route allows it. */
export function presentedKey(headers: IncomingHttpHeaders, allowXApiKey: boolean): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const x = headers["x-api-key"];
  if (allowXApiKey && typeof x === "string" && x.trim()) return x.trim();
  return undefined;
}

export function isAdminToken(headers: IncomingHttpHeaders, adminToken: string): boolean {
  const given = presentedKey(headers, false);
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(adminToken);
  return a.length === b.length && timingSafeEqual(a, b);
}
