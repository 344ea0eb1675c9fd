import type { Db } from "../db";
import type { Prisma } from "../generated/prisma/client";

/** The database client or an open transaction: session writes may join a caller's transaction. */
export type DbClient = Db | Prisma.TransactionClient;

export interface SessionRow {
  id: string;
  userId: string | null;
  operator: boolean;
  organizationId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

const COLUMNS = { id: true, userId: true, operator: true, organizationId: true, createdAt: true, expiresAt: true } as const;

/** Cabinet sessions: only a token's SHA-256 is stored, so a leaked table signs no one in. */
export class CabinetSessionRepository {
  constructor(private readonly db: Db) {}

  async create(
    data: { tokenHash: string; userId: string | null; organizationId: string | null; address: string; userAgent: string | null; expiresAt: Date },
    client: DbClient = this.db,
  ): Promise<SessionRow> {
    return client.cabinetSession.create({ data: { ...data, operator: data.userId === null }, select: COLUMNS });
  }

  /** A session that can still be used: not signed out, not expired. */
  async findLive(tokenHash: string, now: Date): Promise<SessionRow | undefined> {
    const row = await this.db.cabinetSession.findFirst({ where: { tokenHash, revokedAt: null, expiresAt: { gt: now } }, select: COLUMNS });
    return row ?? undefined;
  }

  async findLiveById(id: string, now: Date): Promise<SessionRow | undefined> {
    const row = await this.db.cabinetSession.findFirst({ where: { id, revokedAt: null, expiresAt: { gt: now } }, select: COLUMNS });
    return row ?? undefined;
  }

  async setOrganization(id: string, organizationId: string): Promise<void> {
    await this.db.cabinetSession.update({ where: { id }, data: { organizationId } });
  }

  async revoke(id: string, now: Date): Promise<void> {
    await this.db.cabinetSession.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: now } });
  }

  /** Every live session of a member but the one given: a changed password keeps only the changer's. */
  async revokeOthersOf(userId: string, keep: string, now: Date, client: DbClient = this.db): Promise<number> {
    const { count } = await client.cabinetSession.updateMany({ where: { userId, id: { not: keep }, revokedAt: null }, data: { revokedAt: now } });
    return count;
  }

  /** Every live session of a member, or (userId null) of the operator: "sign out everywhere". */
  async revokeAllOf(userId: string | null, now: Date, client: DbClient = this.db): Promise<number> {
    const where = userId === null ? { operator: true } : { userId };
    const { count } = await client.cabinetSession.updateMany({ where: { ...where, revokedAt: null }, data: { revokedAt: now } });
    return count;
  }
}
