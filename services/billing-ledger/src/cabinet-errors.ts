import { AppError } from "@meter/service-kit";

/** The web cabinet's refusals (sign-in, sessions, invitations, the member API). */
export const CabinetErrors = {
  /** Which of the two was wrong is never said: that would tell who has an account. */
  invalidCredentials: () => new AppError("invalid_credentials", "the email or the password is wrong"),
  tooManyFailures: (retryAfterS: number) =>
    new AppError("rate_limited", "too many failed sign-ins; try again later", { headers: { "retry-after": String(retryAfterS) } }),
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
