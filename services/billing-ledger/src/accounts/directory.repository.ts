import { toMicrorub, type AdminOrganization, type AdminUser, type CabinetOrganization } from "@meter/contracts";
import type { Db } from "../db";

/** The operator's lists: organizations with their money, users with their memberships. */
export class DirectoryRepository {
  constructor(private readonly db: Db) {}

  /**
   * Newest first, `limit` after the cursor's organization; `q` matches a name containing it (any case),
   * an id starting with it (the short id the pages show, "3a652225"), or a member's email containing it.
   * A sequential scan of names is fine for thousands of organizations.
   */
  async organizations(f: { q?: string | undefined; limit: number; cursor?: string | undefined }): Promise<AdminOrganization[]> {
    const q = f.q ? f.q : null;
    const pattern = q ? `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const idPrefix = q && /^[0-9a-f][0-9a-f-]{3,35}$/i.test(q) ? `${q.toLowerCase()}%` : null;
    const rows = await this.db.$queryRaw<{ id: string; name: string; created_at: Date; balance: bigint; reserved: bigint; members: number }[]>`
      SELECT o.id, o.name, o.created_at, o.balance, o.reserved,
             (SELECT count(*) FROM memberships m WHERE m.organization_id = o.id)::int AS members
      FROM organizations o
      WHERE (${pattern}::text IS NULL OR o.name ILIKE ${pattern}::text OR o.id::text LIKE ${idPrefix}::text
             OR EXISTS (SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = o.id AND u.email ILIKE ${pattern}::text))
        AND (${f.cursor ?? null}::uuid IS NULL
             OR (o.created_at, o.id) < (SELECT c.created_at, c.id FROM organizations c WHERE c.id = ${f.cursor ?? null}::uuid))
      ORDER BY o.created_at DESC, o.id DESC
      LIMIT ${f.limit}`;
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      created_at: r.created_at.toISOString(),
      members: r.members,
      balance_microrub: toMicrorub(r.balance),
      reserved_microrub: toMicrorub(r.reserved),
      available_microrub: toMicrorub(r.balance - r.reserved),
    }));
  }

  async users(f: { limit: number; organizationId?: string | undefined; q?: string | undefined }): Promise<AdminUser[]> {
    const rows = await this.db.user.findMany({
      where: {
        ...(f.organizationId ? { memberships: { some: { organizationId: f.organizationId } } } : {}),
        ...(f.q ? { email: { contains: f.q, mode: "insensitive" as const } } : {}),
      },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: f.limit,
      include: { memberships: { include: { organization: { select: { id: true, name: true } } }, orderBy: { createdAt: "asc" } } },
    });
    return rows.map((u) => ({
      id: u.id,
      email: u.email,
      created_at: u.createdAt.toISOString(),
      has_password: u.passwordHash !== null,
      last_sign_in_at: u.lastSignInAt?.toISOString() ?? null,
      organizations: u.memberships.map((m) => ({ id: m.organization.id, name: m.organization.name })),
    }));
  }

  /** The user's organizations, oldest membership first (the first is where a new session starts). */
  async organizationsOf(userId: string): Promise<CabinetOrganization[]> {
    const rows = await this.db.membership.findMany({
      where: { userId },
      orderBy: { createdAt: "asc" },
      include: { organization: { select: { id: true, name: true } } },
    });
    return rows.map((m) => ({ id: m.organization.id, name: m.organization.name }));
  }

  async isMember(userId: string, organizationId: string): Promise<boolean> {
    return (await this.db.membership.count({ where: { userId, organizationId } })) > 0;
  }
}
