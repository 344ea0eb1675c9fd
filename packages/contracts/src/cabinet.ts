import { z } from "zod";
import { endpoint } from "./endpoints";
import { SessionIdentity } from "./identity";
import { Microrub } from "./money";
import { type Operation, Scope } from "./scopes";

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
export const MemberCreateKeyRequest = z.strictObject({
  name: z.string().trim().min(1).max(200),
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

export const SpendQuery = z.strictObject({ days: z.coerce.number().int().min(1).max(90).default(30) });

// The operator's additions to the admin API.
export const CreateInvitationRequest = z.strictObject({ email: Email, organization_id: z.uuid().optional() });
export type CreateInvitationRequest = z.infer<typeof CreateInvitationRequest>;
export const InvitationStatus = z.enum(["pending", "used", "expired", "revoked"]);
export type InvitationStatus = z.infer<typeof InvitationStatus>;

// Answers, shared with the pages (which import these types only).
export interface CabinetOrganization {
  id: string;
  name: string;
}

export interface CabinetMe {
  object: "cabinet_session";
  role: "member";
  user: { id: string; email: string };
  organizations: CabinetOrganization[];
  /** The organization the switcher points at (null when the user belongs to none). */
  organization_id: string | null;
  /** BUDGET_TIMEZONE: the zone a key's budget day starts at 00:00 in. */
  budget_timezone: string;
  session: { id: string; expires_at: string };
}

export interface OperatorMe {
  object: "cabinet_session";
  role: "operator";
  budget_timezone: string;
  session: { id: string; expires_at: string };
}

/** One day's charges of one model and operation (days are budget days, as the budget counts them). */
export interface SpendPoint {
  day: string;
  model: string;
  operation: Operation | string;
  amount_microrub: number;
  requests: number;
}

export interface SpendReport {
  object: "spend_report";
  organization_id: string;
  timezone: string;
  /** Every budget day of the window, oldest first (days without spend included). */
  days: string[];
  data: SpendPoint[];
}

export interface CabinetKey {
  id: string;
  object: "api_key";
  name: string | null;
  prefix: string;
  scopes: Scope[];
  daily_budget_microrub: number;
  status: "active" | "revoked";
  created_at: string;
  revoked_at: string | null;
  /** Today's budget day: settled today plus every active hold, as a hold sees it. */
  usage: { day: string; spent_microrub: number; reserved_microrub: number; remaining_microrub: number };
}

export interface CabinetLedgerEntry {
  id: number;
  kind: LedgerKind;
  amount_microrub: number;
  balance_after_microrub: number;
  reserved_after_microrub: number;
  key_id: string | null;
  key_name: string | null;
  hold_id: string | null;
  model: string | null;
  operation: string | null;
  reference: string | null;
  created_at: string;
}

/** One credit or one request (its hold, then its charge or release) as one line. */
export interface CabinetLedgerLine {
  /** The id of the line's first entry (the credit, or the hold): the cursor. */
  id: number;
  status: LedgerLineStatus;
  /**
   * What the line does to the balance, signed: + a credit, − a charge, − an amount still reserved (it
   * counts against what is available until the request ends), 0 once released.
   */
  amount_microrub: number;
  /** What the request reserved (0 for a credit). */
  reserved_microrub: number;
  operation: string | null;
  model: string | null;
  key_id: string | null;
  key_name: string | null;
  hold_id: string | null;
  reference: string | null;
  created_at: string;
  /** When the request was charged or released; null while reserved, and for a credit. */
  resolved_at: string | null;
}

export interface CabinetLedgerLines {
  object: "list";
  data: CabinetLedgerLine[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface CabinetLedgerPage {
  object: "list";
  data: CabinetLedgerEntry[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface AdminOrganization {
  id: string;
  name: string;
  created_at: string;
  members: number;
  balance_microrub: number;
  reserved_microrub: number;
  available_microrub: number;
}

export interface AdminUser {
  id: string;
  email: string;
  created_at: string;
  has_password: boolean;
  last_sign_in_at: string | null;
  organizations: CabinetOrganization[];
}

export interface Invitation {
  id: string;
  object: "invitation";
  user_id: string;
  email: string;
  status: InvitationStatus;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Returned once, at creation: the token (in `link_path`) is never stored nor shown again. */
export interface CreatedInvitation extends Invitation {
  token: string;
  /** Append to the gateway's base URL: `/cabinet/welcome#invitation=<token>`. */
  link_path: string;
}

/** What a catalog change would touch: a model's recent traffic and the holds placed at its old price. */
export interface ModelActivity {
  model: string;
  operation: string;
  settled_requests: number;
  settled_microrub: number;
  active_holds: number;
  reserved_microrub: number;
}
