import { Router } from "express";
import { z } from "zod";
import { CreateInvitationRequest, InvitationStatus } from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { CabinetServices } from "../cabinet.services";

const Limit = z.coerce.number().int().min(1).max(500).default(100);
const InvitationFilter = z.strictObject({ status: InvitationStatus.optional(), limit: Limit });
const ListFilter = z.strictObject({ limit: Limit });
const ActivityFilter = z.strictObject({ days: z.coerce.number().int().min(1).max(90).default(30) });

/** The admin API's additions for the cabinet (`/admin/v1`): invitations, and the operator's lists. */
export function cabinetAdminRoutes(c: CabinetServices): Router {
  const r = Router();

  r.post("/invitations", async (req, res) => {
    const { email, organization_id } = parseInput(CreateInvitationRequest, req.body);
    res.status(201).json(await c.invitations.invite(email, organization_id));
  });
  r.get("/invitations", async (req, res) => {
    const q = parseInput(InvitationFilter, req.query);
    res.json({ object: "list", data: await c.invitations.list(q.status, q.limit) });
  });
  r.post("/invitations/:id/revoke", async (req, res) => {
    res.json(await c.invitations.revoke(parseInput(z.uuid(), req.params.id)));
  });

  r.get("/organizations", async (req, res) => {
    res.json({ object: "list", data: await c.directory.organizations(parseInput(ListFilter, req.query).limit) });
  });
  r.get("/users", async (req, res) => {
    res.json({ object: "list", data: await c.directory.users(parseInput(ListFilter, req.query).limit) });
  });
  /** Per model and operation: the last days' charges and the holds still active, shown before a tariff change. */
  r.get("/catalog/activity", async (req, res) => {
    res.json({ object: "list", data: await c.money.modelActivity(parseInput(ActivityFilter, req.query).days) });
  });

  return r;
}
