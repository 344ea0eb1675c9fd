import { writeOutboxMessage } from "@meter/messaging";
import type { Db } from "../db";
import type { ApiKey } from "../generated/prisma/client";

/** Why a user may not hold a key of an organization, or "member" when they may. */
export type MembershipCheck = "member" | "no_user" | "no_organization" | "not_member";

/** API keys (only their SHA-256 is stored) and what a key's daily budget has used. */
export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async membership(organizationId: string, userId: string): Promise<MembershipCheck> {
    const membership = await this.db.membership.findUnique({ where: { organizationId_userId: { organizationId, userId } } });
    if (membership) return "member";
    const [user, org] = await Promise.all([
      this.db.user.findUnique({ where: { id: userId } }),
      this.db.organization.findUnique({ where: { id: organizationId } }),
    ]);
    if (!user) return "no_user";
    return org ? "not_member" : "no_organization";
  }

  create(data: {
    userId: string;
    organizationId: string;
    name: string | null;
    prefix: string;
    keyHash: string;
    scopes: string[];
    dailyBudget: bigint;
  }): Promise<ApiKey> {
    return this.db.apiKey.create({ data });
  }

  async find(id: string): Promise<ApiKey | undefined> {
    return (await this.db.apiKey.findUnique({ where: { id } })) ?? undefined;
  }

  async findByHash(keyHash: string): Promise<ApiKey | undefined> {
    return (await this.db.apiKey.findUnique({ where: { keyHash } })) ?? undefined;
  }

  /** Newest first. */
  list(filter: { organizationId?: string | undefined; userId?: string | undefined }): Promise<ApiKey[]> {
    return this.db.apiKey.findMany({
      where: {
        ...(filter.organizationId ? { organizationId: filter.organizationId } : {}),
        ...(filter.userId ? { userId: filter.userId } : {}),
      },
      orderBy: { createdAt: "desc" },
    });
  }

  /**
   * Revokes the key and, in the same transaction, tells the gateways (`billing.key.revoked`, through the
   * outbox). A key revoked already is returned as it is; an unknown one is undefined.
   */
  async revoke(id: string, at: Date): Promise<ApiKey | undefined> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.apiKey.findUnique({ where: { id } });
      if (!row || row.status === "revoked") return row ?? undefined;
      const updated = await tx.apiKey.update({ where: { id }, data: { status: "revoked", revokedAt: at } });
      await writeOutboxMessage(tx, "billing.key.revoked", { version: "v1", key_id: id });
      return updated;
    });
  }

  /**
   * The key's budget day at `at` (or the database's now()) in `timezone`, what settled on it, what its
   * active holds reserve and its budget; undefined for an unknown key.
   */
  async dailyUsage(
    keyId: string,
    timezone: string,
    at: Date | null,
  ): Promise<{ day: string; spent: bigint; reserved: bigint; daily_budget: bigint } | undefined> {
    const rows = await this.db.$queryRaw<{ day: string; spent: bigint; reserved: bigint; daily_budget: bigint }[]>`
      SELECT to_char(d.day, 'YYYY-MM-DD') AS day, COALESCE(u.spent, 0)::bigint AS spent, k.reserved, k.daily_budget
      FROM api_keys k
      CROSS JOIN (SELECT (COALESCE(${at}::timestamptz, now()) AT TIME ZONE ${timezone})::date AS day) d
      LEFT JOIN key_daily_usage u ON u.key_id = k.id AND u.day = d.day
      WHERE k.id = ${keyId}::uuid`;
    return rows[0];
  }
}
