import { Router } from "express";
import { z } from "zod";
import { ChangePasswordRequest, CreateInvitationRequest, InvitationStatus, SignOutRequest, SwitchOrganizationRequest } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import { CabinetErrors } from "../errors";
import { sessionIdentityOf } from "../http/session-identity";
import type { InvitationService } from "./invitation.service";
import type { SessionService } from "./session.service";
import type { SignInService } from "./sign-in.service";

const InvitationFilter = z.strictObject({ status: InvitationStatus.optional(), limit: z.coerce.number().int().min(1).max(500).default(100) });

/**
 * The signed-in person's session (`/cabinet/v1`; the gateway serves it as `/cabinet/api`): who, where,
 * sign-out, and a member's change of password.
 */
export function sessionRoutes(sessions: SessionService, signIn: SignInService): Router {
  const r = Router();
  r.get("/me", async (req, res) => {
    res.json(await sessions.me(sessionIdentityOf(req)));
  });
  r.put("/session/organization", async (req, res) => {
    const { organization_id } = parseInput(SwitchOrganizationRequest, req.body);
    res.json(await sessions.switchOrganization(sessionIdentityOf(req), organization_id));
  });
  r.post("/session/sign-out", async (req, res) => {
    const { everywhere } = parseInput(SignOutRequest, req.body ?? {});
    res.json(await sessions.signOut(sessionIdentityOf(req), everywhere));
  });
  r.post("/password", async (req, res) => {
    const identity = sessionIdentityOf(req);
    if (identity.role !== "member") throw CabinetErrors.membersOnly();
    const { current_password, new_password } = parseInput(ChangePasswordRequest, req.body);
    res.json(await signIn.changePassword(identity, current_password, new_password));
  });
  return r;
}

/** The operator's invitations (`/admin/v1/invitations`): one-time sign-in links to the web cabinet. */
export function invitationAdminRoutes(invitations: InvitationService): Router {
  const r = Router();
  r.post("/invitations", async (req, res) => {
    const { email, organization_id } = parseInput(CreateInvitationRequest, req.body);
    res.status(201).json(await invitations.invite(email, organization_id));
  });
  r.get("/invitations", async (req, res) => {
    const q = parseInput(InvitationFilter, req.query);
    res.json({ object: "list", data: await invitations.list(q.status, q.limit) });
  });
  r.post("/invitations/:id/revoke", async (req, res) => {
    res.json(await invitations.revoke(parseInput(z.uuid(), req.params.id)));
  });
  return r;
}
