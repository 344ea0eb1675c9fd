import { INVITATION_LINK_PATH, INVITATION_TOKEN_PREFIX, type CreatedInvitation, type Invitation, type InvitationStatus } from "@meter/contracts";
import { CabinetErrors } from "../errors";
import { invitationStatus, type InvitationRepository, type InvitationRow } from "./invitation.repository";
import type { AccountService } from "../accounts/account.service";
import { newSecretToken, secretTokenHash } from "./secret-token";

export interface InvitationServiceDeps {
  accounts: AccountService;
  invitations: InvitationRepository;
  /** CABINET_INVITATION_TTL_HOURS */
  ttlMs: number;
  clock: () => Date;
}

/**
 * The operator invites a person by email: the user is created if new (and added to an organization
 * if one is named), and gets a one-time sign-in link to set a password with. Inviting again replaces
 * the previous link; a user who forgot their password is simply invited again.
 */
export class InvitationService {
  constructor(private readonly deps: InvitationServiceDeps) {}

  async invite(email: string, organizationId?: string): Promise<CreatedInvitation> {
    // The organization is checked first, so a mistyped id leaves no user behind.
    if (organizationId) await this.deps.accounts.getOrganization(organizationId);
    const { user } = await this.deps.accounts.createUser(email);
    if (organizationId) await this.deps.accounts.addMember(organizationId, user.id);
    const token = newSecretToken(INVITATION_TOKEN_PREFIX);
    const now = this.deps.clock();
    const row = await this.deps.invitations.replace(user.id, secretTokenHash(token), now, new Date(now.getTime() + this.deps.ttlMs));
    return { ...this.render(row), token, link_path: INVITATION_LINK_PATH + token };
  }

  async list(status: InvitationStatus | undefined, limit: number): Promise<Invitation[]> {
    return (await this.deps.invitations.list({ status, limit }, this.deps.clock())).map((r) => this.render(r));
  }

  async revoke(id: string): Promise<Invitation> {
    const row = await this.deps.invitations.revoke(id, this.deps.clock());
    if (!row) throw CabinetErrors.invitationNotFound(id);
    return this.render(row);
  }

  private render(row: InvitationRow): Invitation {
    return {
      id: row.id,
      object: "invitation",
      user_id: row.userId,
      email: row.email,
      status: invitationStatus(row, this.deps.clock()),
      created_at: row.createdAt.toISOString(),
      expires_at: row.expiresAt.toISOString(),
      used_at: row.usedAt?.toISOString() ?? null,
    };
  }
}
