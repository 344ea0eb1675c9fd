import { AppError } from "@meter/service-kit";

export const BillingErrors = {
  /** With retryAfterS: money parked in allowances caused it (docs/api.md, "Allowances"); it may succeed then. */
  insufficientBalance: (retryAfterS?: number) =>
    new AppError("insufficient_balance", "the organization's available balance does not cover this request", retryAfter(retryAfterS)),
  dailyBudgetExceeded: (retryAfterS?: number) =>
    new AppError("daily_budget_exceeded", "this API key's daily budget does not cover this request", retryAfter(retryAfterS)),
  invalidKey: () => new AppError("invalid_api_key", "the API key is invalid, revoked or expired"),
  holdNotFound: (id: string) => new AppError("not_found", `hold ${id} does not exist`),
  holdConflict: (id: string, status: string) => new AppError("hold_already_resolved", `hold ${id} is already ${status}`, { details: { status } }),
  /** Only the service that placed a hold settles, releases or closes it, and each places in its own name only. */
  foreignHold: (id: string) =>
    new AppError("foreign_hold", `hold ${id} is not this service's: a service places, settles, releases and closes only its own holds; nothing changed`),
  holdIdReused: (id: string) => new AppError("conflict", `hold ${id} already exists with other parameters`),
  /** A close with another used amount, one below what was recorded or above the allowance, or a release of one waiting for its requests. */
  allowanceConflict: (id: string) =>
    new AppError("conflict", `allowance ${id} does not take this: it was closed with another used amount, or the amount does not fit what it holds`),
  settleExceedsHold: (id: string) => new AppError("settle_exceeds_hold", `the amount exceeds what hold ${id} reserved`),
  /** Nothing was written: the same operation may be sent again. */
  holdsBusy: () =>
    new AppError(
      "service_unavailable",
      "billing could not apply this hold operation in time (a lock held too long, or its database busy); nothing changed, try again",
      {
        headers: { "retry-after": "1" },
      },
    ),
  holdOpFailed: (id: string, cause: unknown) =>
    new AppError("internal_error", `hold operation on ${id} failed (${cause instanceof Error ? cause.message : String(cause)}); nothing changed`, {
      cause,
    }),
  /** The books cross-check's repair by hand: no owner lists a final record of the hold. */
  finalRecordNotFound: (id: string) => new AppError("not_found", `no hold owner lists a final record of hold ${id}`),
  /** ...or the record needs no repair, or none billing may apply (a claim the owner may not make): nothing changed. */
  nothingToRepair: (id: string, why: string) => new AppError("conflict", `hold ${id} has nothing to repair by hand: ${why}; nothing changed`),
  ownerUnreachable: (source: string, cause: unknown) =>
    new AppError("service_unavailable", `the owner of ${source} holds could not be asked; nothing changed, try again`, {
      cause,
      headers: { "retry-after": "5" },
    }),
  upstreamKeyEnvRefused: (problem: string) => new AppError("invalid_request", `provider.api_key_env: ${problem}`),
  userNotFound: (id: string) => new AppError("not_found", `user ${id} does not exist`),
  organizationNotFound: (id: string) => new AppError("not_found", `organization ${id} does not exist`),
  keyNotFound: (id: string) => new AppError("not_found", `API key ${id} does not exist`),
  keyNotActive: (id: string) => new AppError("conflict", `API key ${id} is revoked or expired: it cannot be changed; create a new key`),
  expiryNotInFuture: () => new AppError("invalid_request", "expires_at: must be a time in the future (or null: never expires)"),
  /** The change is saved; only the call-back of money set aside ahead failed, and the same change again retries it. */
  allowancesNotRecalled: (id: string, cause: unknown) =>
    new AppError(
      "service_unavailable",
      `the change to API key ${id} is saved, but money set aside ahead for its requests could not be called back yet: send the same change again`,
      { cause, headers: { "retry-after": "1" } },
    ),
  modelNotFound: (id: string) => new AppError("model_not_found", `model ${id} does not exist`),
  /** The request log's `cursor` is only ever a `next_cursor` it gave out. */
  badRequestLogCursor: () =>
    new AppError("invalid_request", "cursor: not a cursor this API issued (pass the previous page's next_cursor as it is)", { details: { param: "cursor" } }),
  badRequestLogRange: () => new AppError("invalid_request", "from must be before to", { details: { param: "from" } }),
  badAnalyticsRange: (maxDays: number) =>
    new AppError("invalid_request", `the window may span at most ${maxDays} days at this granularity`, { details: { param: "from" } }),
  notAMember: () => new AppError("invalid_request", "the user is not a member of the organization"),
  creditReferenceReused: (reference: string) =>
    new AppError("idempotency_key_mismatch", `credit reference "${reference}" was already used with another amount`),
};

/** A refusal that may succeed later says when, as a header and in its details (an op's result carries it). */
function retryAfter(seconds: number | undefined): { headers?: Record<string, string>; details?: Record<string, unknown> } {
  return seconds === undefined ? {} : { headers: { "retry-after": String(seconds) }, details: { retry_after_seconds: seconds } };
}

/** The web cabinet's refusals (sign-in, sessions, invitations, the member API). */
export const CabinetErrors = {
  /** Which of the two was wrong is never said: that would tell who has an account. */
  invalidCredentials: () => new AppError("invalid_credentials", "the email or the password is wrong"),
  wrongCurrentPassword: () => new AppError("invalid_credentials", "the current password is wrong; the password was not changed"),
  tooManyFailures: (retryAfterS: number) =>
    new AppError("rate_limited", "too many failed sign-ins from this address; try again later", {
      headers: { "retry-after": String(retryAfterS) },
    }),
  sessionInvalid: () => new AppError("authentication_required", "the session is unknown, expired or signed out: sign in again"),
  invitationInvalid: () =>
    new AppError("invitation_invalid", "this sign-in link was already used, has expired or was replaced by a newer one: ask for a new invitation"),
  invitationNotFound: (id: string) => new AppError("not_found", `invitation ${id} does not exist`),
  operatorOnly: () => new AppError("insufficient_scope", "only the operator may use this"),
  membersOnly: () => new AppError("insufficient_scope", "this is a member's page; the operator has no organizations of their own"),
  noOrganization: () => new AppError("not_found", "you are not a member of any organization yet"),
  notYourOrganization: (id: string) => new AppError("not_found", `organization ${id} does not exist or you are not a member of it`),
  notYourKey: (id: string) => new AppError("not_found", `API key ${id} does not exist`),
};

/** Webhook endpoints' refusals (docs/api.md, "Webhooks"). */
export const WebhookErrors = {
  invalidUrl: (problem: string) => new AppError("invalid_webhook_url", `url: ${problem}`),
  addressNotAllowed: (host: string, address: string) =>
    new AppError(
      "webhook_address_not_allowed",
      `url: ${host} is or resolves to ${address}, a private, loopback, link-local or otherwise non-public address; webhooks go to public addresses only`,
    ),
  tooMany: (max: number) => new AppError("conflict", `an organization has at most ${max} webhook endpoints; delete one first`),
  notFound: (id: string) => new AppError("not_found", `webhook endpoint ${id} does not exist`),
  deliveryNotFound: (id: string) => new AppError("not_found", `webhook delivery ${id} does not exist`),
  deliveryNotFailed: (id: string, status: string) =>
    new AppError("conflict", `webhook delivery ${id} is ${status}: only a failed delivery is sent again (a pending one is on its way)`),
};
