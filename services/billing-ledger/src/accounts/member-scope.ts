import type { SessionIdentity } from "@meter/contracts";
import { CabinetErrors } from "../errors";
import type { DirectoryRepository } from "./directory.repository";

export interface MemberOrganization {
  userId: string;
  organizationId: string;
}

/**
 * What a member's page may touch: their own user in the organization chosen in the switcher. The
 * membership is checked on every call, not only when the organization was chosen, so a membership
 * that ends takes effect at once.
 */
export class MemberScope {
  constructor(private readonly directory: DirectoryRepository) {}

  async of(identity: SessionIdentity): Promise<MemberOrganization> {
    if (identity.role !== "member") throw CabinetErrors.membersOnly();
    if (!identity.organization_id) throw CabinetErrors.noOrganization();
    if (!(await this.directory.isMember(identity.user_id, identity.organization_id))) throw CabinetErrors.notYourOrganization(identity.organization_id);
    return { userId: identity.user_id, organizationId: identity.organization_id };
  }
}
