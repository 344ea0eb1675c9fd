import { Router } from "express";
import { CabinetEndpoints } from "@meter/contracts";
import { onlyFrom, parseInput } from "@meter/service-kit";
import type { SessionService } from "./session.service";
import type { SignInService } from "./sign-in.service";

/**
 * What only the gateway asks (signed as itself): sign-ins, which open sessions, and the check of a
 * session cookie on every cabinet request.
 */
export function cabinetInternalRoutes(c: { signIn: SignInService; sessions: SessionService }): Router {
  const r = Router();
  const { signIn, acceptInvitation, operatorSession, verifySession } = CabinetEndpoints;

  r.post(signIn.path, onlyFrom("gateway"), async (req, res) => {
    const b = parseInput(signIn.request, req.body);
    res.status(201).json(await c.signIn.signIn(b.email, b.password, { address: b.address, userAgent: b.user_agent }));
  });
  r.post(acceptInvitation.path, onlyFrom("gateway"), async (req, res) => {
    const b = parseInput(acceptInvitation.request, req.body);
    res.status(201).json(await c.signIn.acceptInvitation(b.token, b.password, { address: b.address, userAgent: b.user_agent }));
  });
  r.post(operatorSession.path, onlyFrom("gateway"), async (req, res) => {
    const b = parseInput(operatorSession.request, req.body);
    res.status(201).json(await c.signIn.operatorSession({ address: b.address, userAgent: b.user_agent }));
  });
  r.post(verifySession.path, onlyFrom("gateway"), async (req, res) => {
    res.json(await c.sessions.verify(parseInput(verifySession.request, req.body).token));
  });

  return r;
}
