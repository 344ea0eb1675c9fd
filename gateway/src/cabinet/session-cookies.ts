import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { CABINET_CSRF_COOKIE, CABINET_SESSION_COOKIE } from "@meter/contracts";

/** CABINET_SECURE_COOKIES: `auto` marks cookies Secure when the request came over https (here or at a proxy). */
export type SecureCookies = "auto" | "always" | "never";

/** Both cookies live under /cabinet only: no other path of the gateway ever receives them. */
const PATH = "/cabinet";

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

function isHttps(req: IncomingMessage): boolean {
  if ((req.socket as TLSSocket).encrypted) return true;
  const forwarded = req.headers["x-forwarded-proto"];
  return (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim().toLowerCase() === "https";
}

/**
 * The CSRF token is derived from the session's secret (HMAC), so it needs no storage and cannot be
 * forged by a site that cannot read the page: the "signed double-submit" pattern. The page reads it
 * from its own cookie and sends it back in a header; a cross-site request can do neither.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("meter-cabinet-csrf-v1").digest("base64url");
}

export function csrfTokenMatches(sessionToken: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The session cookie (HttpOnly: scripts never see the secret) and the CSRF cookie (readable by the
 * page), both SameSite=Strict, expiring with the session, Secure whenever the page is served over https.
 */
export function sessionCookies(req: IncomingMessage, mode: SecureCookies, token: string, expiresAt: Date): string[] {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
  const attrs = attributes(req, mode, maxAge);
  return [`${CABINET_SESSION_COOKIE}=${token}; ${attrs}; HttpOnly`, `${CABINET_CSRF_COOKIE}=${csrfTokenFor(token)}; ${attrs}`];
}

export function clearedCookies(req: IncomingMessage, mode: SecureCookies): string[] {
  const attrs = attributes(req, mode, 0);
  return [`${CABINET_SESSION_COOKIE}=; ${attrs}; HttpOnly`, `${CABINET_CSRF_COOKIE}=; ${attrs}`];
}

function attributes(req: IncomingMessage, mode: SecureCookies, maxAge: number): string {
  const secure = mode === "always" || (mode === "auto" && isHttps(req));
  return `Path=${PATH}; Max-Age=${maxAge}; SameSite=Strict${secure ? "; Secure" : ""}`;
}
