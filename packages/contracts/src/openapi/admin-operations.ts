import type { ErrorCode } from "../errors";
import {
  AddMemberRequest,
  AdminListQuery,
  CatalogActivityQuery,
  CreateKeyRequest,
  CreateOrganizationRequest,
  CreateUserRequest,
  CreditRequest,
  CrossCheckRequest,
  HoldListQuery,
  InvitationListQuery,
  KeyListQuery,
  ListQuery,
} from "../admin";
import { ReleaseHoldRequest } from "../billing";
import { CreateInvitationRequest } from "../cabinet";
import { ModelUpsert } from "../catalog";
import { body, JSON_ERRORS, type Answer, type ApiOperation, type Body, type OperationGroup } from "./operation";
import { ApiKey, Balance, KeyUsage, LedgerPage, Organization, User } from "./response-schemas";

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
const list = (what: string): Partial<Record<200, Answer>> => ({ 200: ok(`\`{object: "list", data}\`: ${what}`) });

export const AdminAccountOperations = {
  createUser: op(
    "post",
    "/users",
    "Create a user (idempotent on the lower-cased email)",
    { 200: ok("The user, who existed", body("User", User)), 201: ok("The user, new", body("User", User)) },
    { request: body("CreateUserRequest", CreateUserRequest), errors: ["conflict"] },
  ),
  users: op("get", "/users", "The users, with their memberships, has_password and last_sign_in_at", list("users"), { query: AdminListQuery }),
  user: op("get", "/users/{user_id}", "One user", { 200: ok("The user", body("User", User)) }, { errors: ["not_found"] }),
  createOrganization: op(
    "post",
    "/organizations",
    "Create an organization",
    { 201: ok("The organization", body("Organization", Organization)) },
    { request: body("CreateOrganizationRequest", CreateOrganizationRequest) },
  ),
  organizations: op("get", "/organizations", "The organizations, with balances and member counts", list("organizations"), { query: AdminListQuery }),
  organization: op(
    "get",
    "/organizations/{organization_id}",
    "One organization",
    { 200: ok("The organization", body("Organization", Organization)) },
    {
      errors: ["not_found"],
    },
  ),
  addMember: op(
    "post",
    "/organizations/{organization_id}/members",
    "Add a member (idempotent: 201 either way)",
    { 201: ok("Added") },
    { request: body("AddMemberRequest", AddMemberRequest), errors: ["not_found"] },
  ),
  credit: op(
    "post",
    "/organizations/{organization_id}/credits",
    "Credit an organization (idempotent on `reference`)",
    { 200: ok("A replay of the same reference and amount: the ledger entry"), 201: ok("The ledger entry") },
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
  catalogActivity: op(
    "get",
    "/catalog/activity",
    "Per model and operation: the last days' charges and the holds still active (before a tariff change)",
    list("one entry per model and operation"),
    { query: CatalogActivityQuery },
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
  keys: op("get", "/keys", "API keys, by organization or user (never the key itself)", list("keys"), { query: KeyListQuery }),
  key: op("get", "/keys/{key_id}", "One API key (never the key itself)", { 200: ok("The key", body("ApiKey", ApiKey)) }, { errors: ["not_found"] }),
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
  models: op("get", "/models", "Every model of the catalog, enabled or not, with its provider", list("models")),
  model: op(
    "get",
    "/models/{model_id}",
    "One model of the catalog",
    { 200: ok("The model") },
    { rest: "model_id", description: MODEL_ID, errors: ["model_not_found"] },
  ),
  putModel: op(
    "put",
    "/models/{model_id}",
    "Create or replace a model (a change applies within 5 s; a hold keeps its price)",
    { 200: ok("The model, updated"), 201: ok("The model, created") },
    { request: body("ModelUpsert", ModelUpsert), rest: "model_id", description: MODEL_ID, errors: ["unsupported_parameter"] },
  ),
} satisfies OperationGroup;

export const AdminHoldOperations = {
  holds: op("get", "/holds", "The hold report: holds by status, source and age", list("holds, each with its source and owner_ref"), { query: HoldListQuery }),
  releaseHold: op(
    "post",
    "/holds/{hold_id}/release",
    "Release a hold nobody resolved (an operator's decision; the reason goes to the ledger)",
    { 200: ok("The hold, released") },
    { request: body("ReleaseHoldRequest", ReleaseHoldRequest), errors: ["not_found", "hold_already_resolved"] },
  ),
  booksCrossCheck: op(
    "post",
    "/books/cross-check",
    "The books cross-check against every hold owner, now (repaired unless `repair` is false)",
    { 200: ok("`{owners, differences}` (docs/api.md, Backups and the books cross-check)") },
    { request: body("CrossCheckRequest", CrossCheckRequest) },
  ),
} satisfies OperationGroup;

export const AdminInvitationOperations = {
  createInvitation: op(
    "post",
    "/invitations",
    "Invite a user to the web cabinet: a one-time sign-in link",
    { 201: ok("The invitation, with its `token` and `link_path`, shown once") },
    { request: body("CreateInvitationRequest", CreateInvitationRequest), errors: ["not_found"] },
  ),
  invitations: op("get", "/invitations", "Invitations, by status", list("invitations"), { query: InvitationListQuery }),
  revokeInvitation: op(
    "post",
    "/invitations/{invitation_id}/revoke",
    "Revoke an invitation",
    { 200: ok("The invitation, revoked") },
    { errors: ["not_found"] },
  ),
} satisfies OperationGroup;

export const AdminOperations = {
  ...AdminAccountOperations,
  ...AdminKeyOperations,
  ...AdminCatalogOperations,
  ...AdminHoldOperations,
  ...AdminInvitationOperations,
};
