import { timingSafeEqual } from "node:crypto";
import type { Request, Response, Router } from "express";
import {
  AcceptInvitationRequest,
  CABINET_API_PREFIX,
  CabinetEndpoints,
  CabinetSignInOperations,
  OperatorSignInRequest,
  SessionGrant,
  SignInRequest,
  SignOutRequest,
  type Endpoint,
} from "@meter/contracts";
import { AppError, operationRouter, parseInput } from "@meter/service-kit";
import { requireSession } from "./session-auth";
import { clearedCookies, sessionCookies, type SecureCookies } from "./session-cookies";
import type { SignedCaller } from "./signed-caller";

export interface SignInRoutesOptions {
  billing: SignedCaller;
  adminToken: string;
  secureCookies: SecureCookies;
}

/**
 * The doors into the cabinet: a member's email and password, an invitation's link, the operator's
 * token; and the way out. The session's secret goes into an HttpOnly cookie and nowhere else (the
 * answer's body does not carry it). These take JSON only, which no cross-site form can send (the
 * body is read and checked before these routes, cabinet.ts).
 */
export function signInRoutes(o: SignInRoutesOptions): Router {
  const as = { kind: "service", service: "gateway" } as const;

  /** Opens a session at billing and hands it to the browser as cookies. */
  const open = async <E extends Endpoint>(req: Request, res: Response, e: E, payload: Record<string, unknown>) => {
    const answer = await o.billing.fetch({
      method: "POST",
      path: e.path,
      identity: as,
      body: JSON.stringify({
        ...payload,
        // req.ip honours TRUST_PROXY: a client's own X-Forwarded-For counts only behind a trusted proxy.
        address: (req.ip ?? req.socket.remoteAddress ?? "unknown").slice(0, 100),
        user_agent: req.header("user-agent")?.slice(0, 500) ?? null,
      }),
      requestId: req.requestId,
    });
    const json: unknown = await answer.json().catch(() => undefined);
    if (!answer.ok) {
      const retryAfter = answer.headers.get("retry-after");
      if (retryAfter !== null) res.setHeader("retry-after", retryAfter);
      res.status(answer.status).json(json);
      return;
    }
    const grant = SessionGrant.parse(json);
    res.setHeader("set-cookie", sessionCookies(req, o.secureCookies, grant.token, new Date(grant.expires_at)));
    res.setHeader("cache-control", "no-store");
    res.status(201).json({ object: "cabinet_session", role: grant.role, expires_at: grant.expires_at });
  };

  return operationRouter(CabinetSignInOperations, CABINET_API_PREFIX, {
    signIn: async (req, res) => {
      const { email, password } = parseInput(SignInRequest, res.locals.json);
      await open(req, res, CabinetEndpoints.signIn, { email, password });
    },
    acceptInvitation: async (req, res) => {
      const { token, password } = parseInput(AcceptInvitationRequest, res.locals.json);
      await open(req, res, CabinetEndpoints.acceptInvitation, { token, password });
    },
    // No per-address limit here: ADMIN_TOKEN is accepted as a bearer token on /admin/v1 anyway, and it
    // is long and random enough (at least 16 characters; `npm start` makes 128 bits) not to be guessed.
    operatorSignIn: async (req, res) => {
      const { admin_token } = parseInput(OperatorSignInRequest, res.locals.json);
      if (!sameSecret(admin_token, o.adminToken)) throw new AppError("invalid_credentials", "that is not the admin token");
      await open(req, res, CabinetEndpoints.operatorSession, {});
    },
    signOut: [
      requireSession(o.billing),
      async (req, res) => {
        const { everywhere } = parseInput(SignOutRequest, res.locals.json ?? {});
        const answer = await o.billing.fetch({
          method: "POST",
          path: "/cabinet/v1/session/sign-out",
          identity: res.locals.identity,
          body: JSON.stringify({ everywhere }),
          requestId: req.requestId,
        });
        // The cookies go whatever billing said: a browser asked to sign out is signed out here at least.
        res.setHeader("set-cookie", clearedCookies(req, o.secureCookies));
        res.status(answer.status).json(await answer.json().catch(() => ({})));
      },
    ],
  });
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
