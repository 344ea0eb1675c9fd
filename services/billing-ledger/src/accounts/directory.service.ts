import type { AdminOrganization, AdminOrganizationsQuery, AdminUser, AdminUsersQuery } from "@meter/contracts";
import type { DirectoryRepository } from "./directory.repository";

/** The operator's overview: every organization with its money, every user with their memberships. */
export class DirectoryService {
  constructor(private readonly directory: DirectoryRepository) {}

  /** A page of organizations, newest first, found by name or id. */
  async organizations(q: AdminOrganizationsQuery): Promise<{ object: "list"; data: AdminOrganization[]; has_more: boolean; next_cursor: string | null }> {
    const rows = await this.directory.organizations({ q: q.q, cursor: q.cursor, limit: q.limit + 1 });
    const data = rows.slice(0, q.limit);
    const hasMore = rows.length > q.limit;
    return { object: "list", data, has_more: hasMore, next_cursor: hasMore ? data.at(-1)!.id : null };
  }

  /** Users, newest first: all of them, an organization's members, or those whose email contains `q`. */
  users(q: AdminUsersQuery): Promise<AdminUser[]> {
    return this.directory.users({ limit: q.limit, organizationId: q.organization_id, q: q.q });
  }
}
