import type { Router } from "express";
import { z } from "zod";
import { ADMIN_PREFIX, AdminWebhookOperations, CABINET_API_PREFIX, CabinetWebhookOperations, CreateWebhookRequest, WebhookListQuery } from "@meter/contracts";
import { operationRouter, parseInput } from "@meter/service-kit";
import type { MemberScope } from "../accounts/member-scope";
import { sessionIdentityOf } from "../http/session-identity";
import type { WebhookService } from "./webhook.service";

const Uuid = z.uuid();

/** The operator: any organization's endpoints (`/admin/v1/organizations/{id}/webhooks`) and notices. */
export function webhooksAdminRoutes(webhooks: WebhookService): Router {
  const org = (req: { params: Record<string, unknown> }) => parseInput(Uuid, req.params.organization_id);
  const hook = (req: { params: Record<string, unknown> }) => parseInput(Uuid, req.params.webhook_id);
  return operationRouter(AdminWebhookOperations, ADMIN_PREFIX, {
    createWebhook: async (req, res) => {
      res.status(201).json(await webhooks.create(org(req), parseInput(CreateWebhookRequest, req.body)));
    },
    webhooks: async (req, res) => {
      res.json({ object: "list", data: await webhooks.list(org(req)) });
    },
    deleteWebhook: async (req, res) => {
      res.json(await webhooks.delete(org(req), hook(req)));
    },
    rotateWebhookSecret: async (req, res) => {
      res.json(await webhooks.rotate(org(req), hook(req)));
    },
    testWebhook: async (req, res) => {
      res.status(202).json(await webhooks.test(org(req), hook(req)));
    },
    webhookDeliveries: async (req, res) => {
      res.json({ object: "list", data: await webhooks.deliveries(org(req), hook(req), parseInput(WebhookListQuery, req.query).limit) });
    },
    redeliverWebhook: async (req, res) => {
      res.status(202).json(await webhooks.redeliver(org(req), hook(req), parseInput(Uuid, req.params.delivery_id)));
    },
    notices: async (req, res) => {
      res.json({ object: "list", data: await webhooks.notices(org(req), parseInput(WebhookListQuery, req.query).limit) });
    },
  });
}

/** A member: the endpoints and notices of the organization chosen in the switcher (`/cabinet/v1/webhooks`). */
export function memberWebhooksRoutes(deps: { webhooks: WebhookService; scope: MemberScope }): Router {
  const { webhooks, scope } = deps;
  const org = async (req: Parameters<typeof sessionIdentityOf>[0]) => (await scope.of(sessionIdentityOf(req))).organizationId;
  const hook = (req: { params: Record<string, unknown> }) => parseInput(Uuid, req.params.webhook_id);
  return operationRouter(CabinetWebhookOperations, CABINET_API_PREFIX, {
    webhooks: async (req, res) => {
      res.json({ object: "list", data: await webhooks.list(await org(req)) });
    },
    createWebhook: async (req, res) => {
      res.status(201).json(await webhooks.create(await org(req), parseInput(CreateWebhookRequest, req.body)));
    },
    deleteWebhook: async (req, res) => {
      res.json(await webhooks.delete(await org(req), hook(req)));
    },
    rotateWebhookSecret: async (req, res) => {
      res.json(await webhooks.rotate(await org(req), hook(req)));
    },
    testWebhook: async (req, res) => {
      res.status(202).json(await webhooks.test(await org(req), hook(req)));
    },
    webhookDeliveries: async (req, res) => {
      res.json({ object: "list", data: await webhooks.deliveries(await org(req), hook(req), parseInput(WebhookListQuery, req.query).limit) });
    },
    redeliverWebhook: async (req, res) => {
      res.status(202).json(await webhooks.redeliver(await org(req), hook(req), parseInput(Uuid, req.params.delivery_id)));
    },
    notices: async (req, res) => {
      res.json({ object: "list", data: await webhooks.notices(await org(req), parseInput(WebhookListQuery, req.query).limit) });
    },
  });
}
