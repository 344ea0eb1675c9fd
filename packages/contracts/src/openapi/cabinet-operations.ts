import type { ErrorCode } from "../errors";
import {
  AcceptInvitationRequest,
  CabinetLedgerFilter,
  CabinetLedgerLinesQuery,
  CabinetLedgerQuery,
  ChangePasswordRequest,
  MemberCreateKeyRequest,
  OperatorSignInRequest,
  SignInRequest,
  SignOutRequest,
  SpendQuery,
  SwitchOrganizationRequest,
} from "../cabinet";
import { ListJobsQuery } from "../media";
import { body, JSON_ERRORS, type Answer, type ApiOperation, type Body, type OperationGroup } from "./operation";

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

const ok = (description: string): Answer => ({ description });
const SESSION_OPENED: Partial<Record<201, Answer>> = {
  201: ok('`{object: "cabinet_session", role, expires_at}`; the session\'s secret is in the HttpOnly cookie `meter_session` only'),
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
    { 200: ok("Signed out") },
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
    { 200: ok("A page of files") },
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
  deleteFile: op("delete", "/files/{file_id}", "Delete one of the member's files", { 200: ok("Deleted") }, { errors: ["file_not_found"] }),
} satisfies OperationGroup;

/** The member's jobs, forwarded to media-jobs. */
export const CabinetJobOperations = {
  jobs: op("get", "/jobs", "The member's media jobs, newest first", { 200: ok("A page of jobs") }, { query: ListJobsQuery, errors: ["media_disabled"] }),
} satisfies OperationGroup;

/** Who is signed in and where: billing-ledger's member API. */
export const CabinetSessionOperations = {
  me: op("get", "/me", "The session: the member and their organizations, or the operator", { 200: ok('`{object: "cabinet_session", role, ...}`') }),
  switchOrganization: op(
    "put",
    "/session/organization",
    "Choose the organization the member's pages show",
    { 200: ok("The session") },
    {
      request: body("SwitchOrganizationRequest", SwitchOrganizationRequest),
      errors: ["not_found"],
    },
  ),
  endSession: op(
    "post",
    "/session/sign-out",
    "End the session at billing, leaving the cookies (the pages use /cabinet/api/sign-out)",
    { 200: ok("Signed out") },
    { request: body("SignOutRequest", SignOutRequest) },
  ),
  changePassword: op(
    "post",
    "/password",
    "A member changes their password (other sessions end)",
    { 200: ok('`{object: "password_change", signed_out}`') },
    {
      request: body("ChangePasswordRequest", ChangePasswordRequest),
      errors: ["invalid_credentials"],
    },
  ),
} satisfies OperationGroup;

/** The chosen organization's money: billing-ledger's member API. */
export const CabinetMoneyOperations = {
  balance: op("get", "/balance", "The organization's balance", { 200: ok("The balance") }),
  spend: op("get", "/spend", "Charges per budget day, model and operation", { 200: ok('`{object: "spend_report", ...}`') }, { query: SpendQuery }),
  ledgerLines: op(
    "get",
    "/ledger/lines",
    "The ledger, one line per credit or request, newest first",
    { 200: ok("A page of lines") },
    {
      query: CabinetLedgerLinesQuery,
    },
  ),
  ledger: op("get", "/ledger", "The ledger's entries, newest first", { 200: ok("A page of entries") }, { query: CabinetLedgerQuery }),
  ledgerCsv: op(
    "get",
    "/ledger.csv",
    "The whole ledger as CSV",
    { 200: { description: "The entries, newest first", text: "text/csv" } },
    {
      query: CabinetLedgerFilter,
    },
  ),
} satisfies OperationGroup;

/** The member's own keys in the chosen organization: billing-ledger's member API. */
export const CabinetKeyOperations = {
  keys: op("get", "/keys", "The member's keys, with today's usage", { 200: ok('`{object: "list", data}`') }),
  createKey: op(
    "post",
    "/keys",
    "Create a key (shown once)",
    { 201: ok("The key, with `key`") },
    {
      request: body("MemberCreateKeyRequest", MemberCreateKeyRequest),
    },
  ),
  revokeKey: op("post", "/keys/{key_id}/revoke", "Revoke one of the member's keys", { 200: ok("The key, revoked") }, { errors: ["not_found"] }),
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
export const CabinetMemberOperations = { ...CabinetSessionOperations, ...CabinetMoneyOperations, ...CabinetKeyOperations };
