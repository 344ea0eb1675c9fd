import { isUniqueViolation, type Db } from "../db";
import type { LedgerEntry, Membership, Organization, User } from "../generated/prisma/client";

/** Users, organizations and memberships as the admin API keeps them, and an organization's ledger. */
export class AccountRepository {
  constructor(private readonly db: Db) {}

  /** The user with this (normalized) email, made when there is none; a concurrent maker's user is found. */
  async findOrCreateUser(email: string): Promise<{ user: User; created: boolean }> {
    const existing = await this.db.user.findUnique({ where: { email } });
    if (existing) return { user: existing, created: false };
    try {
      return { user: await this.db.user.create({ data: { email } }), created: true };
    } catch (e) {
      if (isUniqueViolation(e)) return this.findOrCreateUser(email);
      throw e;
    }
  }

  async findUser(id: string): Promise<User | undefined> {
    return (await this.db.user.findUnique({ where: { id } })) ?? undefined;
  }

  async createOrganization(name: string): Promise<Organization> {
    return this.db.organization.create({ data: { name } });
  }

  async findOrganization(id: string): Promise<Organization | undefined> {
    return (await this.db.organization.findUnique({ where: { id } })) ?? undefined;
  }

  /** Undefined for an unknown organization. */
  async updateOrganization(id: string, data: { lowBalance: bigint | null }): Promise<Organization | undefined> {
    const { count } = await this.db.organization.updateMany({ where: { id }, data });
    return count === 0 ? undefined : this.findOrganization(id);
  }

  /** Idempotent: a member added twice keeps the first membership. */
  async addMember(organizationId: string, userId: string): Promise<Membership> {
    return this.db.membership.upsert({
      where: { organizationId_userId: { organizationId, userId } },
      create: { organizationId, userId },
      update: {},
    });
  }

  /**
   * Up to `limit` entries, newest first by (created_at, id), after entry `before` when given (the
   * cursor stays an entry's id; its place is its created_at and id, so paging needs no single sequence
   * across organizations: docs/scale.md).
   */
  async ledger(organizationId: string, limit: number, before?: number): Promise<LedgerEntry[]> {
    const after = before === undefined ? undefined : await this.db.ledgerEntry.findFirst({ where: { organizationId, id: BigInt(before) } });
    if (before !== undefined && !after) return [];
    return this.db.ledgerEntry.findMany({
      where: {
        organizationId,
        ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: limit,
    });
  }
}
