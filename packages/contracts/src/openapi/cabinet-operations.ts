import type { ErrorCode } from "../errors";
import {
  AcceptInvitationRequest,
  CabinetBalance,
  CabinetKey,
  CabinetKeyList,
  CabinetLedgerCsvQuery,
  CabinetLedgerLines,
  CabinetLedgerPage,
  CabinetSession,
  CabinetSignedIn,
  CreatedCabinetKey,
  PasswordChanged,
  SignedOut,
  SpendReport,
  CabinetLedgerLinesQuery,
  CabinetLedgerQuery,
  ChangePasswordRequest,
  MemberCreateKeyRequest,
  OperatorSignInRequest,
  SignInRequest,
  SignOutRequest,
  SpendQuery,
  SwitchOrganizationRequest,
  UpdateMeRequest,
} from "../cabinet";
import { UpdateKeyRequest } from "../admin";
import { FileDeleted, FileList } from "../files";
import { CabinetRequestLogFilter, CabinetRequestLogQuery, RequestLogList, RequestLogTotals } from "../request-log";
import { AnalyticsQuery, AnalyticsReport } from "../usage-analytics";
import { JobList, ListJobsQuery } from "../media";
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
import { body, JSON_ERRORS, type Answer, type ApiOperation, type Body, type OperationGroup } from "./operation";
import { ModelList } from "./response-schemas";

/**
 * The web cabinet's API at `/cabinet/api` on the gateway (docs/api.md "The web cabinet"), called by its
 * pages with the session cookie (and X-CSRF-Token on every state-changing call). The gateway answers
 * sign-in itself and forwards the rest: files and jobs to their services, the member API to
 * billing-ledger's `/cabinet/v1`, `/cabinet/api/admin/...` to the operator's `/admin/v1/...`.
 */
export const CABINET_API_PREFIX = "/cabinet/api";

const SESSION_ERRORS: ErrorCode[] = ["authentication_required", "csrf_token_invalid", "insufficient_scope", "service_unavailable", "internal_error"];

function op(
  method: ApiOperation["method"],
  path: string,
  summary: string,
  answers: ApiOperation["answers"],
  more: { request?: Body; query?: ApiOperation["query"]; errors?: ErrorCode[]; security?: "none"; description?: string } = {},
): ApiOperation {
  const { errors = [], security = "cabinet-session", ...rest } = more;
  const own: ErrorCode[] = security === "none" ? ["service_unavailable", "internal_error"] : SESSION_ERRORS;
  return {
    method,
    path: `${CABINET_API_PREFIX}${path}`,
    tag: "Cabinet",
    summary,
    security,
    ...rest,
    answers,
    errors: [...own, ...(method === "get" || method === "delete" ? [] : JSON_ERRORS), ...(more.query ? ["invalid_request" as const] : []), ...errors],
  };
}

const ok = (description: string, b?: Body): Answer => ({ description, ...(b ? { body: b } : {}) });
const SESSION_OPENED: Partial<Record<201, Answer>> = {
  201: ok(
    '`{object: "cabinet_session", role, expires_at}`; the session\'s secret is in the HttpOnly cookie `meter_session` only',
    body("CabinetSignedIn", CabinetSignedIn),
  ),
};

/** The doors in and out, answered by the gateway (it sets and clears the cookies). */
export const CabinetSignInOperations = {
  signIn: op("post", "/sign-in", "A member signs in with email and password", SESSION_OPENED, {
    security: "none",
    request: body("SignInRequest", SignInRequest),
    errors: ["invalid_credentials", "rate_limited"],
  }),
  acceptInvitation: op("post", "/invitations/accept", "Accept an invitation: set the password and sign in", SESSION_OPENED, {
    security: "none",
    request: body("AcceptInvitationRequest", AcceptInvitationRequest),
    errors: ["invitation_invalid"],
  }),
  operatorSignIn: op("post", "/operator/sign-in", "The operator signs in with ADMIN_TOKEN", SESSION_OPENED, {
    security: "none",
    request: body("OperatorSignInRequest", OperatorSignInRequest),
    errors: ["invalid_credentials"],
  }),
  signOut: op(
    "post",
    "/sign-out",
    "Sign out (`everywhere`: every session of the user); the cookies are cleared",
    { 200: ok("Signed out: how many sessions ended", body("SignedOut", SignedOut)) },
    {
      request: body("SignOutRequest", SignOutRequest),
    },
  ),
} satisfies OperationGroup;

/** The member's files, forwarded to the files service. */
export const CabinetFileOperations = {
  files: op(
    "get",
    "/files",
    "The member's files",
    { 200: ok("A page of files", body("FileList", FileList)) },
    {
      query: {
        limit: { description: "1-100, default 20", schema: { type: "integer", minimum: 1, maximum: 100 } },
        cursor: { description: "next_cursor of the previous page", schema: { type: "string" } },
      },
    },
  ),
  fileContent: op(
    "get",
    "/files/{file_id}/content",
    "Download one of the member's files",
    { 200: { description: "The bytes", binary: true } },
    {
      errors: ["file_not_found", "file_not_verified"],
    },
  ),
  deleteFile: op(
    "delete",
    "/files/{file_id}",
    "Delete one of the member's files",
    { 200: ok("Deleted", body("FileDeleted", FileDeleted)) },
    { errors: ["file_not_found"] },
  ),
} satisfies OperationGroup;

/** The member's jobs, forwarded to media-jobs. */
export const CabinetJobOperations = {
  jobs: op(
    "get",
    "/jobs",
    "The member's media jobs, newest first",
    { 200: ok("A page of jobs", body("JobList", JobList)) },
    { query: ListJobsQuery, errors: ["media_disabled"] },
  ),
} satisfies OperationGroup;

/** Who is signed in and where: billing-ledger's member API. */
export const CabinetSessionOperations = {
  me: op("get", "/me", "The session: the member and their organizations, or the operator", {
    200: ok('`{object: "cabinet_session", role, ...}`', body("CabinetSession", CabinetSession)),
  }),
  updateMe: op(
    "patch",
    "/me",
    "A member's own settings: the cabinet's language, kept for them in every browser",
    { 200: ok("The session", body("CabinetSession", CabinetSession)) },
    { request: body("UpdateMeRequest", UpdateMeRequest) },
  ),
  switchOrganization: op(
    "put",
    "/session/organization",
    "Choose the organization the member's pages show",
    { 200: ok("The session", body("CabinetSession", CabinetSession)) },
    {
      request: body("SwitchOrganizationRequest", SwitchOrganizationRequest),
      errors: ["not_found"],
    },
  ),
  endSession: op(
    "post",
    "/session/sign-out",
    "End the session at billing, leaving the cookies (the pages use /cabinet/api/sign-out)",
    { 200: ok("Signed out: how many sessions ended", body("SignedOut", SignedOut)) },
    { request: body("SignOutRequest", SignOutRequest) },
  ),
  changePassword: op(
    "post",
    "/password",
    "A member changes their password (other sessions end)",
    { 200: ok('`{object: "password_change", signed_out}`', body("PasswordChanged", PasswordChanged)) },
    {
      request: body("ChangePasswordRequest", ChangePasswordRequest),
      errors: ["invalid_credentials"],
    },
  ),
} satisfies OperationGroup;

/** The chosen organization's money: billing-ledger's member API. */
export const CabinetMoneyOperations = {
  balance: op("get", "/balance", "The organization's balance, with what allowances set aside apart", {
    200: ok("The balance", body("CabinetBalance", CabinetBalance)),
  }),
  spend: op(
    "get",
    "/spend",
    "Charges per budget day, model and operation",
    { 200: ok('`{object: "spend_report", ...}`', body("SpendReport", SpendReport)) },
    { query: SpendQuery },
  ),
  ledgerLines: op(
    "get",
    "/ledger/lines",
    "The ledger, one line per credit or request, newest first",
    { 200: ok("A page of lines", body("CabinetLedgerLines", CabinetLedgerLines)) },
    {
      query: CabinetLedgerLinesQuery,
    },
  ),
  ledger: op(
    "get",
    "/ledger",
    "The ledger's entries, newest first",
    { 200: ok("A page of entries", body("CabinetLedgerPage", CabinetLedgerPage)) },
    { query: CabinetLedgerQuery },
  ),
  ledgerCsv: op(
    "get",
    "/ledger.csv",
    "The ledger's lines as CSV: what the Ledger page shows under the same filter, every page",
    { 200: { description: "The lines, newest first", text: "text/csv" } },
    {
      query: CabinetLedgerCsvQuery,
    },
  ),
} satisfies OperationGroup;

/** The chosen organization's request log (docs/api.md "Request log"): the Requests page and its CSV. */
export const CabinetRequestLogOperations = {
  requests: op(
    "get",
    "/requests",
    "The organization's paid requests, newest first",
    { 200: ok("A page of entries", body("RequestLogList", RequestLogList)) },
    { query: CabinetRequestLogQuery },
  ),
  requestsCsv: op(
    "get",
    "/requests.csv",
    "The same entries as CSV, with the same filters",
    { 200: { description: "The entries, newest first, one line per row of the page", text: "text/csv" } },
    { query: CabinetRequestLogFilter },
  ),
  requestTotals: op(
    "get",
    "/requests/totals",
    "What the same filter adds up to, every page of it",
    { 200: ok("The totals", body("RequestLogTotals", RequestLogTotals)) },
    { query: CabinetRequestLogFilter },
  ),
  analytics: op(
    "get",
    "/analytics",
    "Requests, tokens, units, spend and errors per hour or per budget day, by key or by model",
    { 200: ok("The figures", body("AnalyticsReport", AnalyticsReport)) },
    { query: AnalyticsQuery },
  ),
  analyticsCsv: op(
    "get",
    "/analytics.csv",
    "The same figures as CSV, one line per bucket and group",
    { 200: { description: "The figures, oldest bucket first", text: "text/csv" } },
    { query: AnalyticsQuery },
  ),
} satisfies OperationGroup;

/** The member's own keys in the chosen organization: billing-ledger's member API. */
export const CabinetKeyOperations = {
  keys: op("get", "/keys", "The member's keys, with today's usage", { 200: ok('`{object: "list", data}`', body("CabinetKeyList", CabinetKeyList)) }),
  createKey: op(
    "post",
    "/keys",
    "Create a key (shown once)",
    { 201: ok("The key, with `key`", body("CreatedCabinetKey", CreatedCabinetKey)) },
    {
      request: body("MemberCreateKeyRequest", MemberCreateKeyRequest),
    },
  ),
  updateKey: op(
    "patch",
    "/keys/{key_id}",
    "Change one of the member's keys: name, daily budget, expiry, alert percents (as the operator's PATCH /admin/v1/keys/{key_id})",
    { 200: ok("The key, changed", body("CabinetKey", CabinetKey)) },
    { request: body("UpdateKeyRequest", UpdateKeyRequest), errors: ["not_found", "conflict"] },
  ),
  revokeKey: op(
    "post",
    "/keys/{key_id}/revoke",
    "Revoke one of the member's keys",
    { 200: ok("The key, revoked", body("CabinetKey", CabinetKey)) },
    { errors: ["not_found"] },
  ),
} satisfies OperationGroup;

/** The chosen organization's webhook endpoints and notices: billing-ledger's member API. */
export const CabinetWebhookOperations = {
  webhooks: op("get", "/webhooks", "The organization's webhook endpoints (never their secrets)", {
    200: ok('`{object: "list", data}`', body("WebhookEndpointList", WebhookEndpointList)),
  }),
  createWebhook: op(
    "post",
    "/webhooks",
    "Register a webhook endpoint (its secret shown here and on rotation only)",
    { 201: ok("The endpoint, with `secret`", body("WebhookEndpoint", WebhookEndpoint)) },
    { request: body("CreateWebhookRequest", CreateWebhookRequest), errors: ["conflict", "invalid_webhook_url", "webhook_address_not_allowed"] },
  ),
  deleteWebhook: op(
    "delete",
    "/webhooks/{webhook_id}",
    "Delete a webhook endpoint",
    { 200: ok("The endpoint, deleted", body("WebhookEndpoint", WebhookEndpoint)) },
    { errors: ["not_found"] },
  ),
  rotateWebhookSecret: op(
    "post",
    "/webhooks/{webhook_id}/rotate-secret",
    "Replace an endpoint's secret",
    { 200: ok("The endpoint, with its new `secret`", body("WebhookEndpoint", WebhookEndpoint)) },
    { errors: ["not_found"] },
  ),
  testWebhook: op(
    "post",
    "/webhooks/{webhook_id}/test",
    "Send a `test` event to one endpoint",
    { 202: ok("The delivery, queued", body("WebhookTestSent", WebhookTestSent)) },
    { errors: ["not_found"] },
  ),
  redeliverWebhook: op(
    "post",
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
    "Send a failed delivery once more, now (it is failed again if that attempt fails too)",
    { 202: ok("The delivery, pending again", body("WebhookDelivery", WebhookDelivery)) },
    { errors: ["not_found", "conflict"] },
  ),
  webhookDeliveries: op(
    "get",
    "/webhooks/{webhook_id}/deliveries",
    "An endpoint's delivery log, newest first",
    { 200: ok('`{object: "list", data}`', body("WebhookDeliveryList", WebhookDeliveryList)) },
    { query: WebhookListQuery, errors: ["not_found"] },
  ),
  notices: op(
    "get",
    "/notices",
    "The organization's events as notices, newest first",
    { 200: ok('`{object: "list", data}`', body("NoticeList", NoticeList)) },
    { query: WebhookListQuery },
  ),
} satisfies OperationGroup;

/** The models the chosen organization can call, with their tariffs: the Models page (billing-ledger). */
export const CabinetCatalogOperations = {
  models: op(
    "get",
    "/models",
    "The models the organization can call and their tariffs: what GET /v1/models answers a key",
    { 200: ok("Every enabled model", body("ModelList", ModelList)) },
    { errors: ["not_found"] },
  ),
} satisfies OperationGroup;

/** The pages themselves and their files, served by the gateway. */
export const CabinetPageOperations = {
  asset: {
    method: "get",
    path: "/cabinet/assets/{name}",
    tag: "Cabinet",
    summary: "A file of the pages (script, style), cached for a year: its name changes with its content",
    security: "none",
    answers: { 200: { description: "The file", binary: true } },
    errors: ["not_found"],
  },
  home: {
    method: "get",
    path: "/cabinet",
    tag: "Cabinet",
    summary: "The cabinet's page",
    security: "none",
    answers: { 200: { description: "The one HTML page", text: "text/html" } },
    errors: [],
  },
  page: {
    method: "get",
    path: "/cabinet/{page}",
    rest: "page",
    tag: "Cabinet",
    summary: "The cabinet's page at any of its addresses (the page routes in the browser)",
    security: "none",
    answers: { 200: { description: "The one HTML page", text: "text/html" } },
    errors: [],
  },
} satisfies OperationGroup;

/** What billing-ledger serves under `/cabinet/v1` (the gateway's `/cabinet/api`). */
export const CabinetMemberOperations = {
  ...CabinetSessionOperations,
  ...CabinetMoneyOperations,
  ...CabinetRequestLogOperations,
  ...CabinetKeyOperations,
  ...CabinetWebhookOperations,
  ...CabinetCatalogOperations,
};
