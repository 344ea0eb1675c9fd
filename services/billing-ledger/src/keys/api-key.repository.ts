import { writeOutboxMessage } from "@meter/messaging";
import type { Db } from "../db";
import type { ApiKey } from "../generated/prisma/client";

/** An open allowance of a key: a hold its holder (`source`) spends locally (docs/api.md, "Allowances"). */
export interface OpenAllowance {
  id: string;
  source: string | null;
}

/** What a key's holder may change after its creation (undefined: unchanged). */
export interface KeyChanges {
  name?: string | undefined;
  dailyBudget?: bigint | undefined;
  expiresAt?: Date | null | undefined;
  budgetAlertPercents?: number[] | undefined;
}

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
    // With its row in the key-hash table, in one transaction (docs/scale.md: key lookup by hash).
    return this.db.$transaction(async (tx) => {
      const key = await tx.apiKey.create({ data });
      await tx.apiKeyHash.create({ data: { keyHash: key.keyHash, keyId: key.id, organizationId: key.organizationId } });
      return key;
    });
  }

  async find(id: string): Promise<ApiKey | undefined> {
    return (await this.db.apiKey.findFirst({ where: { id } })) ?? undefined;
  }

  /** Through the key-hash table, then the key in its organization; a key made by a release without that table by its own column. */
  async findByHash(keyHash: string): Promise<ApiKey | undefined> {
    const ref = await this.db.apiKeyHash.findUnique({ where: { keyHash } });
    if (ref) return (await this.db.apiKey.findFirst({ where: { organizationId: ref.organizationId, id: ref.keyId } })) ?? undefined;
    return (await this.db.apiKey.findFirst({ where: { keyHash } })) ?? undefined;
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
   * outbox) and the organization's webhooks (`key.revoked`). A key revoked already is returned as it is; an unknown one is undefined.
   */
  async revoke(id: string, at: Date): Promise<ApiKey | undefined> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.apiKey.findFirst({ where: { id } });
      if (!row || row.status === "revoked") return row ?? undefined;
      const updated = await tx.apiKey.update({
        where: { organizationId_id: { organizationId: row.organizationId, id } },
        data: { status: "revoked", revokedAt: at },
      });
      await writeOutboxMessage(tx, "billing.key.revoked", { version: "v1", key_id: id });
      // The organization's key.revoked event (docs/api.md, "Webhooks"), in the same transaction.
      const data = { organization_id: updated.organizationId, key_id: id, key_name: updated.name, revoked_at: at.toISOString() };
      await tx.$queryRaw`SELECT webhook_event_emit(${updated.organizationId}::uuid, 'key.revoked', ${`key.revoked:${id}`}, ${JSON.stringify(data)}::jsonb)`;
      return updated;
    });
  }

  /**
   * Changes an active key, under its row lock: a grant or a hold placed on the key (apply_hold_ops locks
   * the same row) sees the key wholly before or wholly after. Returns the key and its allowances still
   * open at the change, and budgetBefore, the daily budget the change replaced, read under the row's
   * lock (two edits at once see each other's); "not_active" for a key revoked, expired or past its
   * expires_at.
   */
  async update(
    id: string,
    changes: KeyChanges,
    now: Date,
  ): Promise<{ row: ApiKey; budgetBefore: bigint; allowances: OpenAllowance[] } | "not_active" | undefined> {
    return this.db.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ organization_id: string; status: string; expires_at: Date | null; daily_budget: bigint }[]>`
        SELECT organization_id, status::text AS status, expires_at, daily_budget FROM api_keys WHERE id = ${id}::uuid FOR NO KEY UPDATE`;
      if (!locked) return undefined;
      if (locked.status !== "active" || (locked.expires_at !== null && locked.expires_at <= now)) return "not_active";
      const row = await tx.apiKey.update({
        where: { organizationId_id: { organizationId: locked.organization_id, id } },
        data: {
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.dailyBudget !== undefined ? { dailyBudget: changes.dailyBudget } : {}),
          ...(changes.expiresAt !== undefined ? { expiresAt: changes.expiresAt } : {}),
          ...(changes.budgetAlertPercents !== undefined ? { budgetAlertPercents: changes.budgetAlertPercents } : {}),
        },
      });
      return { row, budgetBefore: BigInt(locked.daily_budget), allowances: await openAllowances(tx, [id], row.organizationId) };
    });
  }

  /**
   * Closes every active key whose expires_at has passed (status expired, `billing.key.expired` through
   * the outbox): the keys and their allowances still open, to be called back. The candidates are read
   * without locks; then each organization's keys are closed in a transaction of their own, only those
   * still active and due (another replica's sweep, or a revocation, may have taken one meanwhile), so no
   * transaction spans organizations (docs/scale.md).
   */
  async expireDue(now: Date, limit = 500): Promise<{ keyIds: string[]; allowances: OpenAllowance[] }> {
    const due = await this.db.$queryRaw<{ id: string; organization_id: string }[]>`
      SELECT id, organization_id FROM api_keys WHERE status = 'active' AND expires_at <= ${now} ORDER BY expires_at LIMIT ${limit}`;
    const byOrganization = new Map<string, string[]>();
    for (const k of due) byOrganization.set(k.organization_id, [...(byOrganization.get(k.organization_id) ?? []), k.id]);
    const closed = { keyIds: [] as string[], allowances: [] as OpenAllowance[] };
    for (const [organizationId, ids] of byOrganization) {
      const { keyIds, allowances } = await this.expireOf(organizationId, ids, now);
      closed.keyIds.push(...keyIds);
      closed.allowances.push(...allowances);
    }
    return closed;
  }

  /** The keys among `ids` of one organization that are still active and due, closed in one transaction. */
  private async expireOf(organizationId: string, ids: string[], now: Date): Promise<{ keyIds: string[]; allowances: OpenAllowance[] }> {
    return this.db.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ id: string; expires_at: Date; organization_id: string; name: string | null }[]>`
        UPDATE api_keys SET status = 'expired'
        WHERE organization_id = ${organizationId}::uuid AND id = ANY (${ids}::uuid[]) AND status = 'active' AND expires_at <= ${now}
        RETURNING id, expires_at, organization_id, name`;
      for (const r of rows) {
        await writeOutboxMessage(tx, "billing.key.expired", { version: "v1", key_id: r.id, expired_at: r.expires_at.toISOString() });
        // The organization's key.expired event (docs/api.md, "Webhooks"), in the same transaction.
        const data = { organization_id: r.organization_id, key_id: r.id, key_name: r.name, expires_at: r.expires_at.toISOString() };
        await tx.$queryRaw`SELECT webhook_event_emit(${r.organization_id}::uuid, 'key.expired', ${`key.expired:${r.id}`}, ${JSON.stringify(data)}::jsonb)`;
      }
      const keyIds = rows.map((r) => r.id);
      return { keyIds, allowances: keyIds.length > 0 ? await openAllowances(tx, keyIds, organizationId) : [] };
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
      LEFT JOIN key_daily_usage u ON u.organization_id = k.organization_id AND u.key_id = k.id AND u.day = d.day
      WHERE k.id = ${keyId}::uuid`;
    return rows[0];
  }
}

async function openAllowances(db: Pick<Db, "$queryRaw">, keyIds: string[], organizationId: string): Promise<OpenAllowance[]> {
  return db.$queryRaw<OpenAllowance[]>`
    SELECT id, source FROM holds
    WHERE organization_id = ${organizationId}::uuid AND key_id = ANY (${keyIds}::uuid[]) AND kind = 'allowance' AND status = 'active' AND closing_used IS NULL`;
}
