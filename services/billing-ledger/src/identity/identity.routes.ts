import type { Router } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AdminInvitationOperations,
  CABINET_API_PREFIX,
  CabinetSessionOperations,
  ChangePasswordRequest,
  CreateInvitationRequest,
  InvitationListQuery,
  SignOutRequest,
  SwitchOrganizationRequest,
  UpdateMeRequest,
} from "@meter/contracts";
import { operationRouter, parseInput } from "@meter/service-kit";
import { CabinetErrors } from "../errors";
import { sessionIdentityOf } from "../http/session-identity";
import type { InvitationService } from "./invitation.service";
import type { SessionService } from "./session.service";
import type { SignInService } from "./sign-in.service";

/**
 * The signed-in person's session (`/cabinet/v1`; the gateway serves it as `/cabinet/api`): who, where,
 * sign-out, and a member's language and change of password.
 */
export function sessionRoutes(sessions: SessionService, signIn: SignInService): Router {
  return operationRouter(CabinetSessionOperations, CABINET_API_PREFIX, {
    me: async (req, res) => {
      res.json(await sessions.me(sessionIdentityOf(req)));
    },
    updateMe: async (req, res) => {
      const { locale } = parseInput(UpdateMeRequest, req.body);
      res.json(await sessions.updateMe(sessionIdentityOf(req), locale));
    },
    switchOrganization: async (req, res) => {
      const { organization_id } = parseInput(SwitchOrganizationRequest, req.body);
      res.json(await sessions.switchOrganization(sessionIdentityOf(req), organization_id));
    },
    endSession: async (req, res) => {
      const { everywhere } = parseInput(SignOutRequest, req.body ?? {});
      res.json(await sessions.signOut(sessionIdentityOf(req), everywhere));
    },
    changePassword: async (req, res) => {
      const identity = sessionIdentityOf(req);
      if (identity.role !== "member") throw CabinetErrors.membersOnly();
      const { current_password, new_password } = parseInput(ChangePasswordRequest, req.body);
      res.json(await signIn.changePassword(identity, current_password, new_password));
    },
  });
}

/** The operator's invitations (`/admin/v1/invitations`): one-time sign-in links to the web cabinet. */
export function invitationAdminRoutes(invitations: InvitationService): Router {
  return operationRouter(AdminInvitationOperations, ADMIN_PREFIX, {
    createInvitation: async (req, res) => {
      const { email, organization_id } = parseInput(CreateInvitationRequest, req.body);
      res.status(201).json(await invitations.invite(email, organization_id));
    },
    invitations: async (req, res) => {
      const q = parseInput(InvitationListQuery, req.query);
      res.json({ object: "list", data: await invitations.list(q.status, q.limit) });
    },
    revokeInvitation: async (req, res) => {
      res.json(await invitations.revoke(parseInput(z.uuid(), req.params.invitation_id)));
    },
  });
}
