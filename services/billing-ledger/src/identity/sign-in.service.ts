import { INVITATION_TOKEN_PREFIX, type MemberSessionIdentity, type PasswordChanged, type SessionGrant } from "@meter/contracts";
import { CabinetErrors } from "../errors";
import type { CabinetSessionRepository } from "./cabinet-session.repository";
import type { InvitationRepository } from "./invitation.repository";
import { hashPassword, passwordMatches } from "./password";
import { secretTokenHash } from "./secret-token";
import type { ClientContext, SessionService } from "./session.service";
import type { SignInThrottle } from "./sign-in-throttle.service";
import type { UserRepository } from "./user.repository";

export interface SignInServiceDeps {
  users: UserRepository;
  sessions: SessionService;
  sessionRows: CabinetSessionRepository;
  invitations: InvitationRepository;
  throttle: SignInThrottle;
  clock: () => Date;
}

/** The three ways into the cabinet: email and password, an invitation's link, and the operator's token. */
export class SignInService {
  constructor(private readonly deps: SignInServiceDeps) {}

  async signIn(email: string, password: string, ctx: ClientContext): Promise<SessionGrant> {
    const normalized = normalizeEmail(email);
    const attempt = await this.deps.throttle.admit(normalized, ctx.address);
    const user = await this.deps.users.credentials(normalized);
    // Checked even without a user (against a decoy), so an unknown email answers as slowly as a wrong password.
    const matches = await passwordMatches(user?.passwordHash ?? null, password);
    if (!user || !matches) throw CabinetErrors.invalidCredentials();
    await attempt.succeeded();
    await this.deps.users.signedIn(user.id, this.deps.clock());
    return this.deps.sessions.open(user.id, ctx);
  }

  /**
   * Sets the invited user's password and signs them in, using the link up. Sessions opened before (with
   * an older password) end: an invitation doubles as the operator's way to reset a forgotten password.
   */
  async acceptInvitation(token: string, password: string, ctx: ClientContext): Promise<SessionGrant> {
    if (!token.startsWith(INVITATION_TOKEN_PREFIX)) throw CabinetErrors.invitationInvalid();
    // Hashed before the transaction: a tenth of a second of CPU should hold no row lock.
    const passwordHash = await hashPassword(password);
    return this.deps.users.transaction(async (tx) => {
      const now = this.deps.clock();
      const invitation = await this.deps.invitations.consume(secretTokenHash(token), now, tx);
      if (!invitation) throw CabinetErrors.invitationInvalid();
      await this.deps.users.setPassword(invitation.userId, passwordHash, now, tx);
      await this.deps.sessionRows.revokeAllOf(invitation.userId, now, tx);
      return this.deps.sessions.open(invitation.userId, ctx, tx);
    });
  }

  /**
   * A member's new password, given the current one; every other session of theirs ends, this one stays.
   * A wrong current password counts as a failed sign-in of the account from this session, so a borrowed
   * session cannot guess it any faster than the sign-in page can.
   */
  async changePassword(member: MemberSessionIdentity, current: string, next: string): Promise<PasswordChanged> {
    const { email } = await this.deps.users.contact(member.user_id);
    const attempt = await this.deps.throttle.admit(email, `session:${member.session_id}`);
    const stored = await this.deps.users.credentials(email);
    if (!(await passwordMatches(stored?.passwordHash ?? null, current))) throw CabinetErrors.wrongCurrentPassword();
    await attempt.succeeded();
    const passwordHash = await hashPassword(next);
    return this.deps.users.transaction(async (tx) => {
      const now = this.deps.clock();
      await this.deps.users.changePassword(member.user_id, passwordHash, now, tx);
      return { object: "password_change", signed_out: await this.deps.sessionRows.revokeOthersOf(member.user_id, member.session_id, now, tx) };
    });
  }

  /** The gateway has checked ADMIN_TOKEN; from here on the operator's browser carries a session instead. */
  operatorSession(ctx: ClientContext): Promise<SessionGrant> {
    return this.deps.sessions.open(null, ctx);
  }
}

/** As users are stored (AccountService.createUser): trimmed, lower case. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
