import { readCookie } from "./lib/cookies";

/** The gateway's cabinet API: the member's under /cabinet/api, the operator's admin API under /cabinet/api/admin. */
const BASE = "/cabinet/api";
const CSRF_COOKIE = "meter_csrf";
const CSRF_HEADER = "x-csrf-token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter: string | null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The CSRF cookie comes and goes with the session cookie (which the page cannot read). */
export function mayHaveSession(): boolean {
  return readCookie(CSRF_COOKIE) !== undefined;
}

let signedOut: () => void = () => undefined;

/** Called when a request finds the session gone (expired, or signed out elsewhere). */
export function onSignedOut(handler: () => void): void {
  signedOut = handler;
}

/**
 * One JSON call. Every state-changing call carries the CSRF token the gateway set beside the session
 * cookie, and a JSON body (`{}` when there is nothing to say): a cross-site form can send neither.
 */
export async function api<T>(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  let payload: string | undefined;
  if (method !== "GET") {
    headers[CSRF_HEADER] = readCookie(CSRF_COOKIE) ?? "";
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body ?? {});
  }
  const res = await fetch(BASE + path, { method, headers, body: payload, credentials: "same-origin", cache: "no-store" });
  const json: unknown = await res.json().catch(() => undefined);
  if (!res.ok) {
    const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
    // These answer 401 for a wrong password, not for a session that ended.
    if (res.status === 401 && !path.includes("sign-in") && !path.includes("invitations/accept") && path !== "/password") signedOut();
    throw new ApiError(res.status, error?.code ?? "error", error?.message ?? `the server answered ${res.status}`, res.headers.get("retry-after"));
  }
  return json as T;
}

/** A query string without the empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
