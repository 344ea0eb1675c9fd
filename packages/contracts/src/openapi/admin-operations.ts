import type { ErrorCode } from "../errors";
import {
  AddMemberRequest,
  AdminUsersQuery,
  AdminOrganizationsQuery,
  CatalogActivityQuery,
  CreateKeyRequest,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  CrossCheckRequest,
  HoldListQuery,
  RepairHoldByHandRequest,
  InvitationListQuery,
  KeyListQuery,
  ListQuery,
  UpdateKeyRequest,
  UpdateOrganizationRequest,
} from "../admin";
import { z } from "zod";
import { Hold, ReleaseHoldRequest } from "../billing";
import {
  AdminOrganization,
  AdminUser,
  CabinetLedgerLines,
  CabinetLedgerLinesQuery,
  CreatedInvitation,
  CreateInvitationRequest,
  Invitation,
  ModelActivity,
  SpendQuery,
  SpendReport,
} from "../cabinet";
import { CatalogModel, ModelUpsert } from "../catalog";
import {
  CreateWebhookRequest,
  NoticeList,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookListQuery,
  WebhookTestSent,
} from "../webhooks";
import { CabinetRequestLogFilter, CabinetRequestLogQuery, RequestLogList, RequestLogTotals } from "../request-log";
import { AnalyticsQuery, AnalyticsReport } from "../usage-analytics";
import { HealthReport } from "../health";
import { TextModelProviders, TextRequestView } from "../text-routing";
import { body, JSON_ERRORS, type Answer, type ApiOperation, type Body, type OperationGroup } from "./operation";
import {
  ApiKey,
  ApiKeyDetail,
  Balance,
  CrossCheckReport,
  HandRepair,
  KeyUsage,
  LedgerEntry,
  LedgerPage,
  Membership,
  Organization,
  User,
} from "./response-schemas";

/**
 * The operator's API at `/admin/v1` (docs/api.md "Account cabinet"), with ADMIN_TOKEN; billing-ledger
 * serves it, one group per router. The web cabinet's operator session reaches the same operations at
 * `/cabinet/api/admin/...` (docs/api.md "The web cabinet").
 */
export const ADMIN_PREFIX = "/admin/v1";

const ADMIN_ERRORS: ErrorCode[] = ["authentication_required", "invalid_api_key", "insufficient_scope", "service_unavailable", "internal_error"];

function op(
  method: ApiOperation["method"],
  path: string,
  summary: string,
  answers: ApiOperation["answers"],
  more: { request?: Body; query?: ApiOperation["query"]; errors?: ErrorCode[]; rest?: string; description?: string } = {},
): ApiOperation {
  const { errors = [], ...rest } = more;
  return {
    method,
    path: `${ADMIN_PREFIX}${path}`,
    tag: "Admin",
    summary,
    security: "admin",
    ...rest,
    answers,
    errors: [...ADMIN_ERRORS, ...(more.request || method !== "get" ? JSON_ERRORS : []), ...(more.query ? ["invalid_request" as const] : []), ...errors],
  };
}

const ok = (description: string, b?: Body): Answer => ({ description, ...(b ? { body: b } : {}) });
/** `{object: "list", data}`, each item of `item`'s schema. */
const list = (what: string, name: string, item: z.ZodType): Partial<Record<200, Answer>> => ({
  200: ok(`\`{object: "list", data}\`: ${what}`, body(name, z.looseObject({ object: z.literal("list"), data: z.array(item) }))),
});

export const AdminAccountOperations = {
  createUser: op(
    "post",
    "/users",
    "Create a user (idempotent on the lower-cased email)",
    { 200: ok("The user, who existed", body("User", User)), 201: ok("The user, new", body("User", User)) },
    { request: body("CreateUserRequest", CreateUserRequest), errors: ["conflict"] },
  ),
  users: op("get", "/users", "The users, with their memberships, has_password and last_sign_in_at", list("users", "AdminUserList", AdminUser), {
    query: AdminUsersQuery,
  }),
  user: op("get", "/users/{user_id}", "One user", { 200: ok("The user", body("User", User)) }, { errors: ["not_found"] }),
  createOrganization: op(
    "post",
    "/organizations",
    "Create an organization",
    { 201: ok("The organization", body("Organization", Organization)) },
    { request: body("CreateOrganizationRequest", CreateOrganizationRequest) },
  ),
  organizations: op(
    "get",
    "/organizations",
    "The organizations, with balances and member counts: newest first, by page, found by name or id",
    {
      200: ok(
        '`{object: "list", data, has_more, next_cursor}`: organizations',
        body(
          "AdminOrganizationList",
          z.looseObject({ object: z.literal("list"), data: z.array(AdminOrganization), has_more: z.boolean(), next_cursor: z.string().nullable() }),
        ),
      ),
    },
    { query: AdminOrganizationsQuery },
  ),
  organization: op(
    "get",
    "/organizations/{organization_id}",
    "One organization",
    { 200: ok("The organization", body("Organization", Organization)) },
    {
      errors: ["not_found"],
    },
  ),
  updateOrganization: op(
    "patch",
    "/organizations/{organization_id}",
    "Change an organization's `low_balance_microrub` (under it of available balance, `balance.low` is sent; null: never)",
    { 200: ok("The organization", body("Organization", Organization)) },
    { request: body("UpdateOrganizationRequest", UpdateOrganizationRequest), errors: ["not_found"] },
  ),
  addMember: op(
    "post",
    "/organizations/{organization_id}/members",
    "Add a member (idempotent: 201 either way)",
    { 201: ok("Added", body("Membership", Membership)) },
    { request: body("AddMemberRequest", AddMemberRequest), errors: ["not_found"] },
  ),
  credit: op(
    "post",
    "/organizations/{organization_id}/credits",
    "Credit an organization (idempotent on `reference`)",
    {
      200: ok("A replay of the same reference and amount: the ledger entry", body("LedgerEntry", LedgerEntry)),
      201: ok("The ledger entry", body("LedgerEntry", LedgerEntry)),
    },
    { request: body("CreditRequest", CreditRequest), errors: ["not_found", "conflict", "idempotency_key_mismatch"] },
  ),
  balance: op(
    "get",
    "/organizations/{organization_id}/balance",
    "An organization's balance",
    { 200: ok("Credits - settled charges - active holds", body("Balance", Balance)) },
    { errors: ["not_found"] },
  ),
  ledger: op(
    "get",
    "/organizations/{organization_id}/ledger",
    "An organization's ledger, newest first",
    { 200: ok("A page of entries", body("LedgerPage", LedgerPage)) },
    { query: ListQuery, errors: ["not_found"] },
  ),
  ledgerLines: op(
    "get",
    "/organizations/{organization_id}/ledger/lines",
    "An organization's ledger one line per credit or request, as its members' Ledger page shows it",
    { 200: ok("A page of lines", body("CabinetLedgerLines", CabinetLedgerLines)) },
    { query: CabinetLedgerLinesQuery, errors: ["not_found"] },
  ),
  spend: op(
    "get",
    "/organizations/{organization_id}/spend",
    "An organization's charges per budget day, model, operation and key",
    { 200: ok('`{object: "spend_report", ...}`', body("SpendReport", SpendReport)) },
    { query: SpendQuery, errors: ["not_found"] },
  ),
  catalogActivity: op(
    "get",
    "/catalog/activity",
    "Per model and operation: the last days' charges and the holds still active (before a tariff change)",
    list("one entry per model and operation", "ModelActivityList", ModelActivity),
    { query: CatalogActivityQuery },
  ),
} satisfies OperationGroup;

/** Any organization's request log, for the operator (docs/api.md "Request log"). */
export const AdminRequestLogOperations = {
  organizationRequests: op(
    "get",
    "/organizations/{organization_id}/requests",
    "An organization's paid requests, newest first",
    { 200: ok("A page of entries", body("RequestLogList", RequestLogList)) },
    { query: CabinetRequestLogQuery, errors: ["not_found"] },
  ),
  organizationRequestsCsv: op(
    "get",
    "/organizations/{organization_id}/requests.csv",
    "The same entries as CSV, with the same filters",
    { 200: { description: "The entries, newest first", text: "text/csv" } },
    { query: CabinetRequestLogFilter, errors: ["not_found"] },
  ),
  organizationRequestTotals: op(
    "get",
    "/organizations/{organization_id}/requests/totals",
    "What the same filter adds up to, every page of it",
    { 200: ok("The totals", body("RequestLogTotals", RequestLogTotals)) },
    { query: CabinetRequestLogFilter, errors: ["not_found"] },
  ),
  organizationAnalytics: op(
    "get",
    "/organizations/{organization_id}/analytics",
    "Requests, tokens, units, spend and errors per hour or per budget day, by key or by model",
    { 200: ok("The figures", body("AnalyticsReport", AnalyticsReport)) },
    { query: AnalyticsQuery, errors: ["not_found"] },
  ),
  organizationAnalyticsCsv: op(
    "get",
    "/organizations/{organization_id}/analytics.csv",
    "The same figures as CSV, one line per bucket and group",
    { 200: { description: "The figures, oldest bucket first", text: "text/csv" } },
    { query: AnalyticsQuery, errors: ["not_found"] },
  ),
} satisfies OperationGroup;

export const AdminKeyOperations = {
  createKey: op(
    "post",
    "/keys",
    "Create an API key (shown once)",
    { 201: ok("The key, with `key`", body("ApiKey", ApiKey)) },
    { request: body("CreateKeyRequest", CreateKeyRequest), errors: ["not_found"] },
  ),
  keys: op("get", "/keys", "API keys, by organization or user (never the key itself)", list("keys", "ApiKeyList", ApiKey), { query: KeyListQuery }),
  key: op(
    "get",
    "/keys/{key_id}",
    "One API key (never the key itself), with its recent activity and whether its next typical request fits",
    { 200: ok("The key", body("ApiKeyDetail", ApiKeyDetail)) },
    { errors: ["not_found"] },
  ),
  updateKey: op(
    "patch",
    "/keys/{key_id}",
    "Change a key's name, daily budget, expiry or alert percents (a lowered budget holds from the answer on)",
    { 200: ok("The key, changed", body("ApiKey", ApiKey)) },
    {
      request: body("UpdateKeyRequest", UpdateKeyRequest),
      errors: ["not_found", "conflict"],
      description:
        'A lowered `daily_budget_microrub` holds for every request admitted after the answer, money set aside ahead for the key\'s requests (allowances) included: they are called back first. A revoked or expired key cannot be changed (409 `conflict`). See docs/api.md, "Changing a key".',
    },
  ),
  revokeKey: op(
    "post",
    "/keys/{key_id}/revoke",
    "Revoke a key (within 5 s on every gateway)",
    { 200: ok("The key, revoked", body("ApiKey", ApiKey)) },
    {
      errors: ["not_found"],
    },
  ),
  keyUsage: op("get", "/keys/{key_id}/usage", "A key's spending today", { 200: ok("The day's usage", body("KeyUsage", KeyUsage)) }, { errors: ["not_found"] }),
} satisfies OperationGroup;

const MODEL_ID = "A model id may contain `/` (vendor/model), written as is or as `%2F`.";

export const AdminCatalogOperations = {
  models: op("get", "/models", "Every model of the catalog, enabled or not, with its providers", list("models", "CatalogModelList", CatalogModel)),
  model: op(
    "get",
    "/models/{model_id}",
    "One model of the catalog",
    { 200: ok("The model", body("CatalogModel", CatalogModel)) },
    { rest: "model_id", description: MODEL_ID, errors: ["model_not_found"] },
  ),
  putModel: op(
    "put",
    "/models/{model_id}",
    "Create or replace a model (a change applies within 5 s; a hold keeps its price)",
    { 200: ok("The model, updated", body("CatalogModel", CatalogModel)), 201: ok("The model, created", body("CatalogModel", CatalogModel)) },
    { request: body("ModelUpsert", ModelUpsert), rest: "model_id", description: MODEL_ID, errors: ["unsupported_parameter"] },
  ),
} satisfies OperationGroup;

export const AdminHoldOperations = {
  holds: op("get", "/holds", "The hold report: holds by status, source and age", list("holds, each with its source and owner_ref", "HoldList", Hold), {
    query: HoldListQuery,
  }),
  releaseHold: op(
    "post",
    "/holds/{hold_id}/release",
    "Release a hold nobody resolved (an operator's decision; the reason goes to the ledger)",
    { 200: ok("The hold, released", body("Hold", Hold)) },
    { request: body("ReleaseHoldRequest", ReleaseHoldRequest), errors: ["not_found", "hold_already_resolved"] },
  ),
  booksCrossCheck: op(
    "post",
    "/books/cross-check",
    "The books cross-check against every hold owner, now (repaired unless `repair` is false)",
    { 200: ok("`{owners, differences}` (docs/api.md, Backups and the books cross-check)", body("CrossCheckReport", CrossCheckReport)) },
    { request: body("CrossCheckRequest", CrossCheckRequest) },
  ),
  repairHoldByHand: op(
    "post",
    "/books/cross-check/holds/{hold_id}/repair",
    "Repair one owner's record the cross-check left (an `unverifiable` one), on the operator's word; logged, the reason in the ledger",
    { 200: ok("`{difference, outcome}`: the repair applied", body("HandRepair", HandRepair)) },
    { request: body("RepairHoldByHandRequest", RepairHoldByHandRequest), errors: ["not_found", "conflict", "service_unavailable"] },
  ),
} satisfies OperationGroup;

export const AdminInvitationOperations = {
  createInvitation: op(
    "post",
    "/invitations",
    "Invite a user to the web cabinet: a one-time sign-in link",
    { 201: ok("The invitation, with its `token` and `link_path`, shown once", body("CreatedInvitation", CreatedInvitation)) },
    { request: body("CreateInvitationRequest", CreateInvitationRequest), errors: ["not_found"] },
  ),
  invitations: op("get", "/invitations", "Invitations, by status", list("invitations", "InvitationList", Invitation), { query: InvitationListQuery }),
  revokeInvitation: op(
    "post",
    "/invitations/{invitation_id}/revoke",
    "Revoke an invitation",
    { 200: ok("The invitation, revoked", body("Invitation", Invitation)) },
    { errors: ["not_found"] },
  ),
} satisfies OperationGroup;

const WEBHOOK_EVENTS =
  "Events: `budget.threshold`, `balance.low`, `key.revoked`, `key.expired` (and `test`), delivered per the Standard Webhooks spec: docs/api.md, Webhooks.";

/** An organization's webhook endpoints, their delivery logs and its notices. */
export const AdminWebhookOperations = {
  createWebhook: op(
    "post",
    "/organizations/{organization_id}/webhooks",
    "Register a webhook endpoint (its secret shown here and on rotation only)",
    { 201: ok("The endpoint, with `secret`", body("WebhookEndpoint", WebhookEndpoint)) },
    {
      request: body("CreateWebhookRequest", CreateWebhookRequest),
      errors: ["not_found", "conflict", "invalid_webhook_url", "webhook_address_not_allowed"],
      description: WEBHOOK_EVENTS,
    },
  ),
  webhooks: op(
    "get",
    "/organizations/{organization_id}/webhooks",
    "An organization's webhook endpoints (never their secrets)",
    {
      200: ok('`{object: "list", data}`', body("WebhookEndpointList", WebhookEndpointList)),
    },
    { errors: ["not_found"] },
  ),
  deleteWebhook: op(
    "delete",
    "/organizations/{organization_id}/webhooks/{webhook_id}",
    "Delete a webhook endpoint (deliveries not sent yet are dropped)",
    { 200: ok("The endpoint, deleted", body("WebhookEndpoint", WebhookEndpoint)) },
    { errors: ["not_found"] },
  ),
  rotateWebhookSecret: op(
    "post",
    "/organizations/{organization_id}/webhooks/{webhook_id}/rotate-secret",
    "Replace an endpoint's secret: every attempt from now on is signed with the new one",
    { 200: ok("The endpoint, with its new `secret`", body("WebhookEndpoint", WebhookEndpoint)) },
    { errors: ["not_found"] },
  ),
  testWebhook: op(
    "post",
    "/organizations/{organization_id}/webhooks/{webhook_id}/test",
    "Send a `test` event to one endpoint",
    { 202: ok("The delivery, queued", body("WebhookTestSent", WebhookTestSent)) },
    { errors: ["not_found"] },
  ),
  redeliverWebhook: op(
    "post",
    "/organizations/{organization_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
    "Send a failed delivery once more, now (it is failed again if that attempt fails too)",
    { 202: ok("The delivery, pending again", body("WebhookDelivery", WebhookDelivery)) },
    { errors: ["not_found", "conflict"] },
  ),
  webhookDeliveries: op(
    "get",
    "/organizations/{organization_id}/webhooks/{webhook_id}/deliveries",
    "An endpoint's delivery log, newest first, each delivery with its attempts",
    { 200: ok('`{object: "list", data}`', body("WebhookDeliveryList", WebhookDeliveryList)) },
    { query: WebhookListQuery, errors: ["not_found"] },
  ),
  notices: op(
    "get",
    "/organizations/{organization_id}/notices",
    "An organization's events (alerts, revoked and expired keys), newest first",
    { 200: ok('`{object: "list", data}`', body("NoticeList", NoticeList)) },
    { query: WebhookListQuery, errors: ["not_found"] },
  ),
} satisfies OperationGroup;

/**
 * The operator's view of text's upstream routing, served by the text service (the gateway forwards
 * `/admin/v1/text/...` there, and the cabinet's `/cabinet/api/admin/text/...`): kept out of
 * AdminOperations, which billing-ledger serves.
 */
export const AdminTextOperations = {
  textProviders: op(
    "get",
    "/text/providers",
    "Every text model's providers with their health: breaker state, failures in a row, this minute's calls and tokens",
    list("one entry per text model", "TextModelProvidersList", TextModelProviders),
  ),
  textRequest: op(
    "get",
    "/text/requests/{request_id}",
    "One text request with the provider that served it and those that refused it",
    { 200: ok("The request", body("TextRequestView", TextRequestView)) },
    {
      description: "`request_id`: the record id (a hold's `owner_ref`), or the public answer's id (`msg_...`, `resp_...`).",
      errors: ["not_found"],
    },
  ),
} satisfies OperationGroup;

/**
 * The operator's health page, answered by the gateway itself (it knows every service's URL and reaches
 * the broker): kept out of AdminOperations, which billing-ledger serves.
 */
export const AdminHealthOperations = {
  health: op(
    "get",
    "/health",
    "Each service's readiness, the broker's queues with their dead letters, and text's upstream providers",
    { 200: ok("The report; a part that could not be read is marked unavailable with its error", body("HealthReport", HealthReport)) },
    {
      description:
        "Each service's `/readyz` is asked at once, all in parallel, each for at most 1.5 s; the broker over a new connection (passive declarations, no management plugin); the providers from a text replica. Always 200 once authenticated: a service down, the broker or text away shows in its part.",
    },
  ),
} satisfies OperationGroup;

export const AdminOperations = {
  ...AdminAccountOperations,
  ...AdminRequestLogOperations,
  ...AdminKeyOperations,
  ...AdminCatalogOperations,
  ...AdminHoldOperations,
  ...AdminInvitationOperations,
  ...AdminWebhookOperations,
};
