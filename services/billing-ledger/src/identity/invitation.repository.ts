import type { InvitationStatus } from "@meter/contracts";
import type { Db } from "../db";
import type { DbClient } from "./cabinet-session.repository";

export interface InvitationRow {
  id: string;
  userId: string;
  email: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
}

/** One-time sign-in links; only a token's SHA-256 is stored. */
export class InvitationRepository {
  constructor(private readonly db: Db) {}

  /** A new invitation replaces every pending one of the user: only the newest link works. */
  async replace(userId: string, tokenHash: string, now: Date, expiresAt: Date): Promise<InvitationRow> {
    return this.db.$transaction(async (tx) => {
      await tx.cabinetInvitation.updateMany({ where: { userId, usedAt: null, revokedAt: null }, data: { revokedAt: now } });
      const row = await tx.cabinetInvitation.create({ data: { userId, tokenHash, createdAt: now, expiresAt }, include: { user: { select: { email: true } } } });
      return flatten(row);
    });
  }

  async list(filter: { status?: InvitationStatus | undefined; limit: number }, now: Date): Promise<InvitationRow[]> {
    const where =
      filter.status === "pending"
        ? { usedAt: null, revokedAt: null, expiresAt: { gt: now } }
        : filter.status === "used"
          ? { usedAt: { not: null } }
          : filter.status === "revoked"
            ? { usedAt: null, revokedAt: { not: null } }
            : filter.status === "expired"
              ? { usedAt: null, revokedAt: null, expiresAt: { lte: now } }
              : {};
    const rows = await this.db.cabinetInvitation.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: filter.limit,
      include: { user: { select: { email: true } } },
    });
    return rows.map(flatten);
  }

  async revoke(id: string, now: Date): Promise<InvitationRow | undefined> {
    await this.db.cabinetInvitation.updateMany({ where: { id, usedAt: null, revokedAt: null }, data: { revokedAt: now } });
    const row = await this.db.cabinetInvitation.findUnique({ where: { id }, include: { user: { select: { email: true } } } });
    return row ? flatten(row) : undefined;
  }

  /**
   * Uses up a pending invitation inside the caller's transaction (row-locked, so two tabs racing with
   * one link cannot both set a password): its user, or undefined when it is not pending any more.
   */
  async consume(tokenHash: string, now: Date, tx: DbClient): Promise<{ userId: string } | undefined> {
    const rows = await tx.$queryRaw<{ user_id: string }[]>`
      UPDATE cabinet_invitations SET used_at = ${now}
      WHERE token_hash = ${tokenHash} AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
      RETURNING user_id`;
    const row = rows[0];
    return row ? { userId: row.user_id } : undefined;
  }
}

export function invitationStatus(row: Pick<InvitationRow, "usedAt" | "revokedAt" | "expiresAt">, now: Date): InvitationStatus {
  if (row.usedAt) return "used";
  if (row.revokedAt) return "revoked";
  return row.expiresAt > now ? "pending" : "expired";
}

function flatten(row: Omit<InvitationRow, "email"> & { user: { email: string } }): InvitationRow {
  return {
    id: row.id,
    userId: row.userId,
    email: row.user.email,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    usedAt: row.usedAt,
    revokedAt: row.revokedAt,
  };
}
