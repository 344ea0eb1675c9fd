import { Router } from "express";
import { z } from "zod";
import {
  AddMemberRequest,
  CreateKeyRequest,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  ListQuery,
  ModelUpsert,
} from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { AccountService } from "../services/account.service";
import type { ApiKeyService } from "../services/api-key.service";
import type { CatalogService } from "../services/catalog.service";
import { modelIdOf } from "./model-id";
import type { HoldRepository } from "../repositories/hold.repository";

const Uuid = z.uuid();
const KeyFilter = z.object({ organization_id: z.uuid().optional(), user_id: z.uuid().optional() });
const HoldFilter = z.object({
  status: z.enum(["active", "settled", "released", "expired"]).optional(),
  source: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** The account cabinet (`/admin/v1`): thin handlers over the account, key and catalog use-cases. */
export function adminRoutes(deps: { holdReads: HoldRepository; accounts: AccountService; keys: ApiKeyService; catalog: CatalogService }): Router {
  const { accounts, keys, catalog } = deps;
  const r = Router();
  const id = (v: unknown) => parseInput(Uuid, v);

  r.post("/users", async (req, res) => {
    const { email } = parseInput(CreateUserRequest, req.body);
    const { user, created } = await accounts.createUser(email);
    res.status(created ? 201 : 200).json(user);
  });
  r.get("/users/:id", async (req, res) => {
    res.json(await accounts.getUser(id(req.params.id)));
  });

  r.post("/organizations", async (req, res) => {
    const { name } = parseInput(CreateOrganizationRequest, req.body);
    res.status(201).json(await accounts.createOrganization(name));
  });
  r.get("/organizations/:id", async (req, res) => {
    res.json(await accounts.getOrganization(id(req.params.id)));
  });
  r.post("/organizations/:id/members", async (req, res) => {
    const { user_id } = parseInput(AddMemberRequest, req.body);
    res.status(201).json(await accounts.addMember(id(req.params.id), user_id));
  });
  r.post("/organizations/:id/credits", async (req, res) => {
    const body = parseInput(CreditRequest, req.body);
    const { entry, created } = await accounts.credit(id(req.params.id), body.amount_microrub, body.reference);
    res.status(created ? 201 : 200).json(entry);
  });
  r.get("/organizations/:id/balance", async (req, res) => {
    res.json(await accounts.balance(id(req.params.id)));
  });
  r.get("/organizations/:id/ledger", async (req, res) => {
    const q = parseInput(ListQuery, req.query);
    res.json(await accounts.ledger(id(req.params.id), q.limit, q.cursor));
  });

  r.post("/keys", async (req, res) => {
    res.status(201).json(await keys.create(parseInput(CreateKeyRequest, req.body)));
  });
  r.get("/keys", async (req, res) => {
    res.json({ object: "list", data: await keys.list(parseInput(KeyFilter, req.query)) });
  });
  r.get("/keys/:id", async (req, res) => {
    res.json(await keys.get(id(req.params.id)));
  });
  r.post("/keys/:id/revoke", async (req, res) => {
    res.json(await keys.revoke(id(req.params.id)));
  });
  r.get("/keys/:id/usage", async (req, res) => {
    res.json(await keys.usage(id(req.params.id)));
  });

  r.get("/models", async (_req, res) => {
    res.json({ object: "list", data: await catalog.list() });
  });
  r.get("/models/*id", async (req, res) => {
    res.json(await catalog.get(modelIdOf(req)));
  });
  r.put("/models/*id", async (req, res) => {
    const { model, created } = await catalog.upsert(modelIdOf(req), parseInput(ModelUpsert, req.body));
    res.status(created ? 201 : 200).json(model);
  });

  /** The hold report: what is active, and what expired unresolved. */
  r.get("/holds", async (req, res) => {
    const q = parseInput(HoldFilter, req.query);
    res.json({ object: "list", data: await deps.holdReads.list(q) });
  });

  return r;
}
