import { Router } from "express";
import { z } from "zod";
import {
  AddMemberRequest,
  CreateKeyRequest,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  HoldStatus,
  ListQuery,
  ModelUpsert,
  ReleaseHoldRequest,
} from "@meter/contracts";
import { parseInput } from "@meter/service-kit";
import type { AccountService } from "../accounts/account.service";
import type { ApiKeyService } from "../keys/api-key.service";
import type { CatalogService } from "../catalog/catalog.service";
import type { HoldService } from "../holds/hold.service";
import type { KeyUsageService } from "../keys/key-usage.service";
import { modelIdOf } from "../catalog/model-id";
import type { HoldRepository } from "../holds/hold.repository";

const Uuid = z.uuid();
const KeyFilter = z.object({ organization_id: z.uuid().optional(), user_id: z.uuid().optional() });
const HoldFilter = z.object({
  status: HoldStatus.optional(),
  source: z.string().optional(),
  /** Only holds placed more than this many seconds ago (with status=active: the stale ones), oldest first. */
  older_than_s: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** The account cabinet (`/admin/v1`): thin handlers over the account, key and catalog use-cases. */
export function adminRoutes(deps: {
  holdReads: HoldRepository;
  holds: HoldService;
  accounts: AccountService;
  keys: ApiKeyService;
  keyUsage: KeyUsageService;
  catalog: CatalogService;
}): Router {
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
    res.json(await deps.keyUsage.usage(id(req.params.id)));
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

  /** The hold report: what is active (and for how long), and what expired unresolved. */
  r.get("/holds", async (req, res) => {
    const q = parseInput(HoldFilter, req.query);
    const data = await deps.holdReads.list({
      status: q.status,
      source: q.source,
      limit: q.limit,
      ...(q.older_than_s === undefined ? {} : { createdBefore: new Date(Date.now() - q.older_than_s * 1000), oldestFirst: true }),
    });
    res.json({ object: "list", data });
  });
  /** An operator frees a hold nobody resolved; the ledger entry carries the reason. */
  r.post("/holds/:id/release", async (req, res) => {
    const { reason } = parseInput(ReleaseHoldRequest, req.body);
    res.json(await deps.holds.releaseByOperator(id(req.params.id), reason));
  });

  return r;
}
