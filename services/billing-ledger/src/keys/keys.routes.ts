import { Router } from "express";
import { z } from "zod";
import {
  ADMIN_PREFIX,
  AdminKeyOperations,
  BillingEndpoints,
  CABINET_API_PREFIX,
  CabinetKeyOperations,
  CreateKeyRequest,
  KeyListQuery,
  MemberCreateKeyRequest,
  UpdateKeyRequest,
} from "@meter/contracts";
import { onlyFrom, operationRouter, parseInput } from "@meter/service-kit";
import { sessionIdentityOf } from "../http/session-identity";
import type { ApiKeyService } from "./api-key.service";
import type { KeyDetailService } from "./key-detail.service";
import type { KeyUsageService } from "./key-usage.service";
import type { MemberKeysService } from "./member-keys.service";

const Uuid = z.uuid();

/** `POST /internal/v1/keys/verify` (its full path, from the contracts): the gateway checks a caller's key. */
export function keysInternalRoutes(keys: ApiKeyService): Router {
  const r = Router();
  r.post(BillingEndpoints.verifyKey.path, onlyFrom("gateway"), async (req, res) => {
    res.json(await keys.verify(parseInput(BillingEndpoints.verifyKey.request, req.body).key));
  });
  return r;
}

/** The operator's keys (`/admin/v1/keys`): any user's, in any organization they belong to. */
export function keysAdminRoutes(deps: { keys: ApiKeyService; keyUsage: KeyUsageService; keyDetail: KeyDetailService }): Router {
  const { keys } = deps;
  const id = (v: unknown) => parseInput(Uuid, v);

  return operationRouter(AdminKeyOperations, ADMIN_PREFIX, {
    createKey: async (req, res) => {
      res.status(201).json(await keys.create(parseInput(CreateKeyRequest, req.body)));
    },
    keys: async (req, res) => {
      res.json({ object: "list", data: await keys.list(parseInput(KeyListQuery, req.query)) });
    },
    key: async (req, res) => {
      res.json(await deps.keyDetail.detail(id(req.params.key_id)));
    },
    updateKey: async (req, res) => {
      res.json(await keys.update(id(req.params.key_id), parseInput(UpdateKeyRequest, req.body)));
    },
    revokeKey: async (req, res) => {
      res.json(await keys.revoke(id(req.params.key_id)));
    },
    keyUsage: async (req, res) => {
      res.json(await deps.keyUsage.usage(id(req.params.key_id)));
    },
  });
}

/** A member's own keys in the chosen organization (`/cabinet/v1/keys`). */
export function memberKeysRoutes(memberKeys: MemberKeysService): Router {
  return operationRouter(CabinetKeyOperations, CABINET_API_PREFIX, {
    keys: async (req, res) => {
      res.json({ object: "list", data: await memberKeys.list(sessionIdentityOf(req)) });
    },
    createKey: async (req, res) => {
      res.status(201).json(await memberKeys.create(sessionIdentityOf(req), parseInput(MemberCreateKeyRequest, req.body)));
    },
    updateKey: async (req, res) => {
      res.json(await memberKeys.update(sessionIdentityOf(req), parseInput(Uuid, req.params.key_id), parseInput(UpdateKeyRequest, req.body)));
    },
    revokeKey: async (req, res) => {
      res.json(await memberKeys.revoke(sessionIdentityOf(req), parseInput(Uuid, req.params.key_id)));
    },
  });
}
