import {
  SESSION_TOKEN_PREFIX,
  type CabinetLocale,
  type CabinetMe,
  type MemberSessionIdentity,
  type OperatorMe,
  type SessionGrant,
  type SessionIdentity,
  type VerifySessionResponse,
} from "@meter/contracts";
import { CabinetErrors } from "../errors";
import type { CabinetSessionRepository, DbClient, SessionRow } from "./cabinet-session.repository";
import type { DirectoryRepository } from "../accounts/directory.repository";
import { newSecretToken, secretTokenHash } from "./secret-token";
import type { UserRepository } from "./user.repository";

/** Who opened a session, as the gateway saw them (kept on the session for the operator's eyes). */
export interface ClientContext {
  address: string;
  userAgent: string | null;
}

export interface SessionServiceDeps {
  users: UserRepository;
  sessions: CabinetSessionRepository;
  directory: DirectoryRepository;
  /** CABINET_SESSION_TTL_HOURS: a session ends this long after it was opened, whatever happens. */
  ttlMs: number;
  /** BUDGET_TIMEZONE, shown beside the user's own zone. */
  timezone: string;
  clock: () => Date;
}

/**
 * Cabinet sessions: opened by a sign-in, checked by the gateway on every cabinet request (there is no
 * cache, so signing out takes effect on the very next request), ended by signing out, here or
 * everywhere, or by their expiry.
 */
export class SessionService {
  constructor(private readonly deps: SessionServiceDeps) {}

  /** A member's session (starting in their oldest organization), or the operator's (`userId` null). */
  async open(userId: string | null, ctx: ClientContext, client?: DbClient): Promise<SessionGrant> {
    const token = newSecretToken(SESSION_TOKEN_PREFIX);
    const organizationId = userId === null ? null : ((await this.deps.directory.organizationsOf(userId))[0]?.id ?? null);
    const row = await this.deps.sessions.create(
      {
        tokenHash: secretTokenHash(token),
        userId,
        organizationId,
        address: ctx.address,
        userAgent: ctx.userAgent,
        expiresAt: new Date(this.deps.clock().getTime() + this.deps.ttlMs),
      },
      client,
    );
    return { token, session_id: row.id, role: row.operator ? "operator" : "member", expires_at: row.expiresAt.toISOString() };
  }

  async verify(token: string): Promise<VerifySessionResponse> {
    if (!token.startsWith(SESSION_TOKEN_PREFIX)) throw CabinetErrors.sessionInvalid();
    const row = await this.deps.sessions.findLive(secretTokenHash(token), this.deps.clock());
    if (!row) throw CabinetErrors.sessionInvalid();
    return { identity: identityOf(row), expires_at: row.expiresAt.toISOString() };
  }

  async me(identity: SessionIdentity): Promise<CabinetMe | OperatorMe> {
    const row = await this.live(identity);
    const session = { id: row.id, expires_at: row.expiresAt.toISOString() };
    if (identity.role === "operator") return { object: "cabinet_session", role: "operator", budget_timezone: this.deps.timezone, session };
    const user = await this.deps.users.contact(identity.user_id);
    const organizations = await this.deps.directory.organizationsOf(identity.user_id);
    let organizationId = row.organizationId;
    // Signed in before they belonged anywhere, and added since: the session starts where a new one would.
    if (organizationId === null && organizations[0]) {
      organizationId = organizations[0].id;
      await this.deps.sessions.setOrganization(row.id, organizationId);
    }
    return {
      object: "cabinet_session",
      role: "member",
      user,
      organizations,
      organization_id: organizationId,
      budget_timezone: this.deps.timezone,
      session,
    };
  }

  /** A member's own settings: the cabinet's language, for every browser they sign in from. */
  async updateMe(identity: SessionIdentity, locale: CabinetLocale | null): Promise<CabinetMe | OperatorMe> {
    const member = asMember(identity);
    await this.live(member);
    await this.deps.users.setLocale(member.user_id, locale);
    return this.me(member);
  }

  /** The switcher: the session's organization from now on (one of the member's, or 404). */
  async switchOrganization(identity: SessionIdentity, organizationId: string): Promise<CabinetMe | OperatorMe> {
    const member = asMember(identity);
    if (!(await this.deps.directory.isMember(member.user_id, organizationId))) throw CabinetErrors.notYourOrganization(organizationId);
    await this.deps.sessions.setOrganization(member.session_id, organizationId);
    return this.me({ ...member, organization_id: organizationId });
  }

  /** This session, or with `everywhere` every session of the same person (the operator's: every operator session). */
  async signOut(identity: SessionIdentity, everywhere: boolean): Promise<{ signed_out: number }> {
    const now = this.deps.clock();
    if (!everywhere) {
      await this.deps.sessions.revoke(identity.session_id, now);
      return { signed_out: 1 };
    }
    return { signed_out: await this.deps.sessions.revokeAllOf(identity.role === "member" ? identity.user_id : null, now) };
  }

  /** The session behind an identity, still live (the gateway checked it a moment ago; it may have ended since). */
  private async live(identity: SessionIdentity): Promise<SessionRow> {
    const row = await this.deps.sessions.findLiveById(identity.session_id, this.deps.clock());
    if (!row) throw CabinetErrors.sessionInvalid();
    return row;
  }
}

function identityOf(row: SessionRow): SessionIdentity {
  if (row.userId === null) return { kind: "session", role: "operator", session_id: row.id };
  return { kind: "session", role: "member", session_id: row.id, user_id: row.userId, organization_id: row.organizationId };
}

function asMember(identity: SessionIdentity): MemberSessionIdentity {
  if (identity.role !== "member") throw CabinetErrors.membersOnly();
  return identity;
}
