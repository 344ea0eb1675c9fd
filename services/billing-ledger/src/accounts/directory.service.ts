import type { AdminOrganization, AdminUser } from "@meter/contracts";
import type { DirectoryRepository } from "./directory.repository";

/** The operator's overview: every organization with its money, every user with their memberships. */
export class DirectoryService {
  constructor(private readonly directory: DirectoryRepository) {}

  organizations(limit: number): Promise<AdminOrganization[]> {
    return this.directory.organizations(limit);
  }

  users(limit: number): Promise<AdminUser[]> {
    return this.directory.users(limit);
  }
}
