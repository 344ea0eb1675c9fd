import { Router } from "express";
import { z } from "zod";
import { BillingEndpoints, CreateKeyRequest, MemberCreateKeyRequest } from "@meter/contracts";
import { onlyFrom, parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import type { ApiKeyService } from "./api-key.service";
import type { KeyUsageService } from "./key-usage.service";
import type { MemberKeysService } from "./member-keys.service";

const Uuid = z.uuid();
const KeyFilter = z.object({ organization_id: z.uuid().optional(), user_id: z.uuid().optional() });

/** `POST /internal/v1/keys/verify` (its full path, from the contracts): the gateway checks a caller's key. */
export function keysInternalRoutes(keys: ApiKeyService): Router {
  const r = Router();
  r.post(BillingEndpoints.verifyKey.path, onlyFrom("gateway"), async (req, res) => {
    res.json(await keys.verify(parseInput(BillingEndpoints.verifyKey.request, req.body).key));
  });
  return r;
}

/** The operator's keys (`/admin/v1/keys`): any user's, in any organization they belong to. */
export function keysAdminRoutes(deps: { keys: ApiKeyService; keyUsage: KeyUsageService }): Router {
  const { keys } = deps;
  const r = Router();
  const id = (v: unknown) => parseInput(Uuid, v);

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

  return r;
}

/** A member's own keys in the chosen organization (`/cabinet/v1/keys`). */
export function memberKeysRoutes(memberKeys: MemberKeysService): Router {
  const r = Router();
  r.get("/keys", async (req, res) => {
    res.json({ object: "list", data: await memberKeys.list(sessionIdentityOf(req)) });
  });
  r.post("/keys", async (req, res) => {
    res.status(201).json(await memberKeys.create(sessionIdentityOf(req), parseInput(MemberCreateKeyRequest, req.body)));
  });
  r.post("/keys/:id/revoke", async (req, res) => {
    res.json(await memberKeys.revoke(sessionIdentityOf(req), parseInput(Uuid, req.params.id)));
  });
  return r;
}
