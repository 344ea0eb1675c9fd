import { createHmac, timingSafeEqual } from "node:crypto";
import { Identity, InternalHeaders } from "@meter/contracts";

/** How far a signed request's timestamp may be from this process's clock. */
const MAX_SKEW_MS = 60_000;

/**
 * The caller's identity travels from the gateway (or a calling service) as base64url JSON, signed with
 * HMAC-SHA256 over the timestamp, method and path, so a header cannot be replayed onto another route
 * or forged by anyone who reaches a service port without the shared secret.
 */
export function signIdentity(
  secret: string,
  identity: Identity,
  method: string,
  path: string,
  now: number = Date.now(),
): Record<string, string> {
  const encoded = Buffer.from(JSON.stringify(identity)).toString("base64url");
  const timestamp = String(now);
  return {
    [InternalHeaders.identity]: encoded,
    [InternalHeaders.timestamp]: timestamp,
    [InternalHeaders.signature]: mac(secret, timestamp, method, path, encoded),
  };
}

export type VerifyResult = { ok: true; identity: Identity } | { ok: false; reason: string };

export function verifyIdentity(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  method: string,
  path: string,
  now: number = Date.now(),
): VerifyResult {
  const encoded = single(headers[InternalHeaders.identity]);
  const timestamp = single(headers[InternalHeaders.timestamp]);
  const signature = single(headers[InternalHeaders.signature]);
  if (!encoded || !timestamp || !signature) return { ok: false, reason: "missing internal identity" };
  const ts = Number(timestamp);
  if (!Number.isFinite(ts) || Math.abs(now - ts) > MAX_SKEW_MS) return { ok: false, reason: "stale internal identity" };
  const expected = Buffer.from(mac(secret, timestamp, method, path, encoded));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: "bad internal signature" };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "unreadable internal identity" };
  }
  const identity = Identity.safeParse(parsed);
  return identity.success ? { ok: true, identity: identity.data } : { ok: false, reason: "invalid internal identity" };
}

function mac(secret: string, timestamp: string, method: string, path: string, encoded: string): string {
  return createHmac("sha256", secret).update(`${timestamp}\n${method.toUpperCase()}\n${path}\n${encoded}`).digest("hex");
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
