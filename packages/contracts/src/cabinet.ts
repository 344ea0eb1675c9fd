import { z } from "zod";
import { endpoint } from "./endpoints";
import { SessionIdentity } from "./identity";
import { Microrub } from "./money";
import { type Operation, Scope } from "./scopes";
import { KeyName } from "./text-field";
import { KeyActivity, NextRequest } from "./usage-analytics";

/**
 * The web cabinet (`/cabinet` on the gateway): sign-in of members and the operator, sessions, and what
 * the pages read and change. The gateway turns a session cookie into a signed `session` identity; the
 * member API lives in billing-ledger under `/cabinet/v1` (files under files', jobs under media-jobs').
 */

/** HttpOnly, Path=/cabinet: the session's secret, never readable by a script. */
export const CABINET_SESSION_COOKIE = "meter_session";
/** Readable by the page's script, which echoes it in CSRF_HEADER on every state-changing call. */
export const CABINET_CSRF_COOKIE = "meter_csrf";
export const CSRF_HEADER = "x-csrf-token";
/** Prefixes that tell the three secrets apart at a glance (and make a mix-up fail at once). */
export const SESSION_TOKEN_PREFIX = "mcs_";
export const INVITATION_TOKEN_PREFIX = "mci_";
/** Where an invitation's link points; the token rides in the fragment, so no server or Referer sees it. */
export const INVITATION_LINK_PATH = "/cabinet/welcome#invitation=";

export const Password = z.string().min(10, "a password needs at least 10 characters").max(256);
const Email = z.email().max(320);
const Token = z.string().min(1).max(200);

// What the browser sends to the gateway.
export const SignInRequest = z.strictObject({ email: Email, password: z.string().min(1).max(256) });
export type SignInRequest = z.infer<typeof SignInRequest>;
export const AcceptInvitationRequest = z.strictObject({ token: Token, password: Password });
export type AcceptInvitationRequest = z.infer<typeof AcceptInvitationRequest>;
export const OperatorSignInRequest = z.strictObject({ admin_token: z.string().min(1).max(1000) });
export const SignOutRequest = z.strictObject({ everywhere: z.boolean().default(false) });
export type SignOutRequest = z.input<typeof SignOutRequest>;

/** Who is signing in, as the gateway saw them: failed sign-ins are counted per address too. */
const ClientContext = { address: z.string().min(1).max(100), user_agent: z.string().max(500).nullable() };

export const SessionRole = z.enum(["member", "operator"]);
export type SessionRole = z.infer<typeof SessionRole>;

/** A new session: its secret goes into the cookie and nowhere else. */
export const SessionGrant = z.object({ token: z.string(), session_id: z.uuid(), role: SessionRole, expires_at: z.string() });
export type SessionGrant = z.infer<typeof SessionGrant>;

export const VerifySessionRequest = z.strictObject({ token: Token });
export const VerifySessionResponse = z.object({ identity: SessionIdentity, expires_at: z.string() });
export type VerifySessionResponse = z.infer<typeof VerifySessionResponse>;

/** What the gateway asks billing-ledger (signed as the gateway, for no one: a `service` identity). */
export const CabinetEndpoints = {
  /** Email and password; 401 `invalid_credentials`, 429 `rate_limited` after too many failures. */
  signIn: endpoint("POST", "/internal/v1/cabinet/sign-in", SignInRequest.extend(ClientContext), SessionGrant),
  /** Sets the invited user's password and signs them in; 410 `invitation_invalid` when used or expired. */
  acceptInvitation: endpoint("POST", "/internal/v1/cabinet/invitations/accept", AcceptInvitationRequest.extend(ClientContext), SessionGrant),
  /** The gateway checked ADMIN_TOKEN; billing opens the operator's session. */
  operatorSession: endpoint("POST", "/internal/v1/cabinet/operator-sessions", z.strictObject(ClientContext), SessionGrant),
  /** 401 for an unknown, expired or signed-out session. */
  verifySession: endpoint("POST", "/internal/v1/cabinet/sessions/verify", VerifySessionRequest, VerifySessionResponse),
};

// The member API (`/cabinet/v1` in billing-ledger, `/cabinet/api` on the gateway).
export const SwitchOrganizationRequest = z.strictObject({ organization_id: z.uuid() });
/** A member's new password, proven by the current one. */
export const ChangePasswordRequest = z.strictObject({ current_password: z.string().min(1).max(256), new_password: Password });
export type ChangePasswordRequest = z.infer<typeof ChangePasswordRequest>;
/** The password is changed; `signed_out` counts the member's other sessions it ended. */
export const PasswordChanged = z.object({ object: z.literal("password_change"), signed_out: z.number().int() });
export type PasswordChanged = z.infer<typeof PasswordChanged>;
/** The languages the cabinet speaks. */
export const CABINET_LOCALES = ["en", "ru"] as const;
export const CabinetLocale = z.enum(CABINET_LOCALES, {
  error: (issue) =>
    `${typeof issue.input === "string" ? `"${issue.input}" is` : "this is"} not a language the cabinet speaks: use "en" or "ru" (or null: the browser's language)`,
});
export type CabinetLocale = z.infer<typeof CabinetLocale>;
/** A member's own settings: the cabinet's language (null: the browser's decides). */
export const UpdateMeRequest = z.strictObject({ locale: CabinetLocale.nullable() });
export type UpdateMeRequest = z.infer<typeof UpdateMeRequest>;
export const MemberCreateKeyRequest = z.strictObject({
  name: KeyName,
  scopes: z.array(Scope).min(1),
  daily_budget_microrub: Microrub,
});
export type MemberCreateKeyRequest = z.infer<typeof MemberCreateKeyRequest>;

export const LedgerKind = z.enum(["credit", "hold", "settle", "release", "expire"]);
export type LedgerKind = z.infer<typeof LedgerKind>;

/** The ledger, newest first; `since`/`until` bound `created_at` (the page sends a day of the user's zone). */
export const CabinetLedgerFilter = z.strictObject({
  kind: LedgerKind.optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
});
export const CabinetLedgerQuery = CabinetLedgerFilter.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});
export type CabinetLedgerQuery = z.infer<typeof CabinetLedgerQuery>;

/** Where a ledger line stands: a credit, or a request's hold still reserved, charged, or released (or expired). */
export const LedgerLineStatus = z.enum(["credited", "reserved", "charged", "released"]);
export type LedgerLineStatus = z.infer<typeof LedgerLineStatus>;
/** The ledger one line per credit or request, newest first; `since`/`until` bound when it began. */
export const CabinetLedgerLinesQuery = z.strictObject({
  status: LedgerLineStatus.optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});
export type CabinetLedgerLinesQuery = z.infer<typeof CabinetLedgerLinesQuery>;
/** `GET /ledger.csv`: the lines the Ledger page shows under the same filter, every page of them. */
export const CabinetLedgerCsvQuery = CabinetLedgerLinesQuery.pick({ status: true, since: true, until: true });
export type CabinetLedgerCsvQuery = z.infer<typeof CabinetLedgerCsvQuery>;
/**
 * What a line is: a credit, one request, or an allowance (money set aside for a key's next requests by
 * the service that runs them, returned within seconds of their end; docs/api.md "Allowances").
 */
export const LedgerLineKind = z.enum(["credit", "request", "allowance"]);
export type LedgerLineKind = z.infer<typeof LedgerLineKind>;

const BudgetDay = z.iso.date().describe("a budget day, YYYY-MM-DD in BUDGET_TIMEZONE");
/**
 * The spend report's window: the `days` budget days ending today, or `from` to `to` (today when left
 * out), at most 366 days.
 */
export const SpendQuery = z
  .strictObject({ days: z.coerce.number().int().min(1).max(366).default(30), from: BudgetDay.optional(), to: BudgetDay.optional() })
  .refine((q) => !q.to || q.from, { message: "`to` needs `from`", path: ["to"] })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: "`from` must not be after `to`", path: ["from"] })
  .refine((q) => !q.from || !q.to || Date.parse(q.to) - Date.parse(q.from) < 366 * 86_400_000, { message: "at most 366 days", path: ["to"] });
export type SpendQuery = z.infer<typeof SpendQuery>;

// The operator's additions to the admin API.
export const CreateInvitationRequest = z.strictObject({ email: Email, organization_id: z.uuid().optional() });
export type CreateInvitationRequest = z.infer<typeof CreateInvitationRequest>;
export const InvitationStatus = z.enum(["pending", "used", "expired", "revoked"]);
export type InvitationStatus = z.infer<typeof InvitationStatus>;

// Answers, shared with the pages (which import these types only) and the OpenAPI document.
const Timestamp = z.string().describe("ISO 8601");

export const CabinetOrganization = z.object({ id: z.uuid(), name: z.string() });
export type CabinetOrganization = z.infer<typeof CabinetOrganization>;

const SessionInfo = z.object({ id: z.uuid(), expires_at: Timestamp });

export const CabinetMe = z.object({
  object: z.literal("cabinet_session"),
  role: z.literal("member"),
  /** `locale`: the cabinet's language the member chose, ahead of the browser's; null until they choose. */
  user: z.object({ id: z.uuid(), email: z.string(), locale: CabinetLocale.nullable() }),
  organizations: z.array(CabinetOrganization),
  /** The organization the switcher points at (null when the user belongs to none). */
  organization_id: z.uuid().nullable(),
  /** BUDGET_TIMEZONE: the zone a key's budget day starts at 00:00 in. */
  budget_timezone: z.string(),
  session: SessionInfo,
});
export type CabinetMe = z.infer<typeof CabinetMe>;

export const OperatorMe = z.object({
  object: z.literal("cabinet_session"),
  role: z.literal("operator"),
  budget_timezone: z.string(),
  session: SessionInfo,
});
export type OperatorMe = z.infer<typeof OperatorMe>;

/** `GET /cabinet/api/me` and the organization switch: a member's session or the operator's. */
export const CabinetSession = z.discriminatedUnion("role", [CabinetMe, OperatorMe]);

/** What the sign-in routes answer; the session's secret is only in its HttpOnly cookie. */
export const CabinetSignedIn = z.object({ object: z.literal("cabinet_session"), role: SessionRole, expires_at: Timestamp });

/** The sign-out routes: how many sessions ended. */
export const SignedOut = z.looseObject({ signed_out: z.int().nonnegative() });

/** One day's charges of one model and operation (days are budget days, as the budget counts them). */
/**
 * A member's balance: the admin balance, and of what is reserved the part set aside in allowances for
 * keys' next requests (returned within seconds once they stop), apart from requests in progress.
 */
export const CabinetBalance = z.object({
  balance_microrub: z.int(),
  reserved_microrub: Microrub,
  available_microrub: z.int(),
  set_aside_microrub: Microrub,
});
export type CabinetBalance = z.infer<typeof CabinetBalance>;

export const SpendPoint = z.object({
  day: z.string(),
  model: z.string(),
  operation: z.string(),
  amount_microrub: Microrub,
  requests: z.int().nonnegative(),
});
export type SpendPoint = z.infer<typeof SpendPoint> & { operation: Operation | string };

export const SpendReport = z.object({
  object: z.literal("spend_report"),
  organization_id: z.uuid(),
  timezone: z.string(),
  /** Every budget day of the window, oldest first (days without spend included). */
  days: z.array(z.string()),
  data: z.array(SpendPoint),
  /** The window's charges per key, biggest first (key_name null for a key without a name). */
  by_key: z.array(z.object({ key_id: z.uuid().nullable(), key_name: z.string().nullable(), amount_microrub: Microrub, requests: z.int().nonnegative() })),
  /** Totals per calendar month of budget days, the 12 months ending with the window's last day, oldest first. */
  months: z.array(z.object({ month: z.string().describe("YYYY-MM"), amount_microrub: Microrub, requests: z.int().nonnegative() })),
});
export type SpendReport = z.infer<typeof SpendReport>;

export const CabinetKey = z.object({
  id: z.uuid(),
  object: z.literal("api_key"),
  name: z.string().nullable(),
  prefix: z.string(),
  scopes: z.array(Scope),
  daily_budget_microrub: Microrub,
  status: z.enum(["active", "revoked", "expired"]),
  created_at: Timestamp,
  revoked_at: Timestamp.nullable(),
  expires_at: Timestamp.nullable(),
  budget_alert_percents: z.array(z.int()),
  /** Today's budget day: settled today plus every active hold, as a hold sees it. */
  usage: z.object({ day: z.string(), spent_microrub: Microrub, reserved_microrub: Microrub, remaining_microrub: z.int() }),
  activity: KeyActivity,
  /** Whether the key's next typical request fits what is left (the honest budget bar). */
  next_request: NextRequest.nullable(),
});
export type CabinetKey = z.infer<typeof CabinetKey>;
/** A member's new key: the key itself, shown once. */
export const CreatedCabinetKey = z.looseObject({ ...CabinetKey.shape, key: z.string() });
export const CabinetKeyList = z.object({ object: z.literal("list"), data: z.array(CabinetKey) });

export const CabinetLedgerEntry = z.object({
  id: z.int(),
  kind: LedgerKind,
  amount_microrub: z.int(),
  balance_after_microrub: z.int(),
  reserved_after_microrub: z.int(),
  key_id: z.uuid().nullable(),
  key_name: z.string().nullable(),
  hold_id: z.string().nullable(),
  model: z.string().nullable(),
  operation: z.string().nullable(),
  reference: z.string().nullable(),
  created_at: Timestamp,
});
export type CabinetLedgerEntry = z.infer<typeof CabinetLedgerEntry>;

/** One credit or one request (its hold, then its charge or release) as one line. */
export const CabinetLedgerLine = z.object({
  /** The id of the line's first entry (the credit, or the hold): the cursor. */
  id: z.int(),
  kind: LedgerLineKind,
  status: LedgerLineStatus,
  /**
   * What the line does to the balance, signed: + a credit, − a charge, − an amount still reserved (it
   * counts against what is available until the request ends), 0 once released.
   */
  amount_microrub: z.int(),
  /** What the request reserved (0 for a credit). */
  reserved_microrub: z.int(),
  operation: z.string().nullable(),
  model: z.string().nullable(),
  key_id: z.uuid().nullable(),
  key_name: z.string().nullable(),
  hold_id: z.string().nullable(),
  reference: z.string().nullable(),
  created_at: Timestamp,
  /** When the request was charged or released; null while reserved, and for a credit. */
  resolved_at: Timestamp.nullable(),
});
export type CabinetLedgerLine = z.infer<typeof CabinetLedgerLine>;

export const CabinetLedgerLines = z.object({
  object: z.literal("list"),
  data: z.array(CabinetLedgerLine),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export type CabinetLedgerLines = z.infer<typeof CabinetLedgerLines>;

export const CabinetLedgerPage = z.object({
  object: z.literal("list"),
  data: z.array(CabinetLedgerEntry),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export type CabinetLedgerPage = z.infer<typeof CabinetLedgerPage>;

export const AdminOrganization = z.object({
  id: z.uuid(),
  name: z.string(),
  created_at: Timestamp,
  members: z.int().nonnegative(),
  balance_microrub: z.int(),
  reserved_microrub: Microrub,
  available_microrub: z.int(),
});
export type AdminOrganization = z.infer<typeof AdminOrganization>;

export const AdminUser = z.object({
  id: z.uuid(),
  email: z.string(),
  created_at: Timestamp,
  has_password: z.boolean(),
  last_sign_in_at: Timestamp.nullable(),
  organizations: z.array(CabinetOrganization),
});
export type AdminUser = z.infer<typeof AdminUser>;

export const Invitation = z.object({
  id: z.uuid(),
  object: z.literal("invitation"),
  user_id: z.uuid(),
  email: z.string(),
  status: InvitationStatus,
  created_at: Timestamp,
  expires_at: Timestamp,
  used_at: Timestamp.nullable(),
});
export type Invitation = z.infer<typeof Invitation>;

/** Returned once, at creation: the token (in `link_path`) is never stored nor shown again. */
export const CreatedInvitation = Invitation.extend({
  token: z.string(),
  /** Append to the gateway's base URL: `/cabinet/welcome#invitation=<token>`. */
  link_path: z.string(),
});
export type CreatedInvitation = z.infer<typeof CreatedInvitation>;

/** What a catalog change would touch: a model's recent traffic and the holds placed at its old price. */
export const ModelActivity = z.object({
  model: z.string(),
  operation: z.string(),
  settled_requests: z.int().nonnegative(),
  settled_microrub: Microrub,
  active_holds: z.int().nonnegative(),
  reserved_microrub: Microrub,
});
export type ModelActivity = z.infer<typeof ModelActivity>;
