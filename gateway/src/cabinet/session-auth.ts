import type { RequestHandler } from "express";
import { CABINET_SESSION_COOKIE, CSRF_HEADER, CabinetEndpoints, VerifySessionResponse, type SessionIdentity } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import { csrfTokenMatches, readCookie } from "./session-cookies";
import type { SignedCaller } from "./signed-caller";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The cabinet session's secret, from its cookie (sign-out needs it to answer with cleared cookies). */
      sessionToken?: string;
    }
  }
}

const SAFE = new Set(["GET", "HEAD"]);

/**
 * A cabinet request's credentials: the session cookie, checked at billing-ledger on every request (no
 * cache, so a sign-out anywhere takes effect on the next request), and on every state-changing request
 * the CSRF token. `Authorization` is never read here: an API key opens no cabinet page.
 */
export function requireSession(billing: SignedCaller): RequestHandler {
  return async (req, res, next) => {
    const token = readCookie(req, CABINET_SESSION_COOKIE);
    if (!token) throw new AppError("authentication_required", "sign in to the cabinet first");
    if (!SAFE.has(req.method) && !csrfTokenMatches(token, req.header(CSRF_HEADER))) {
      throw new AppError("csrf_token_invalid", `this request lacks the session's CSRF token (the ${CSRF_HEADER} header)`);
    }
    res.locals.identity = await verify(billing, token, req.requestId);
    res.locals.sessionToken = token;
    next();
  };
}

async function verify(billing: SignedCaller, token: string, requestId: string): Promise<SessionIdentity> {
  const e = CabinetEndpoints.verifySession;
  const answer = await billing.fetch({
    method: e.method,
    path: e.path,
    identity: { kind: "service", service: "gateway" },
    body: JSON.stringify({ token }),
    requestId,
  });
  if (answer.status === 401 || answer.status === 400)
    throw new AppError("authentication_required", "the session has ended (expired or signed out): sign in again");
  if (!answer.ok) throw new AppError("service_unavailable", "sessions cannot be checked right now; try again", { headers: { "retry-after": "2" } });
  return VerifySessionResponse.parse(await answer.json()).identity;
}
