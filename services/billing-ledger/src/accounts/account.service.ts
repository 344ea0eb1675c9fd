import { toMicrorub, type BalanceResponse } from "@meter/contracts";
import type { Db } from "../db";
import { BillingErrors } from "../errors";
import { Prisma } from "../generated/prisma/client";

export interface LedgerEntryDto {
  id: number;
  object: "ledger_entry";
  organization_id: string;
  key_id: string | null;
  hold_id: string | null;
  kind: string;
  amount_microrub: number;
  balance_after_microrub: number;
  reserved_after_microrub: number;
  reference: string | null;
  created_at: string;
}

/** Users, organizations, memberships, credits and balances: the account cabinet's rules. */
export class AccountService {
  constructor(private readonly db: Db) {}

  /** Idempotent on email: a second call returns the existing user. */
  async createUser(email: string): Promise<{ user: { id: string; email: string; created_at: string }; created: boolean }> {
    const normalized = email.trim().toLowerCase();
    const existing = await this.db.user.findUnique({ where: { email: normalized } });
    if (existing) return { user: renderUser(existing), created: false };
    try {
      return { user: renderUser(await this.db.user.create({ data: { email: normalized } })), created: true };
    } catch (e) {
      if (isUniqueViolation(e)) return this.createUser(email);
      throw e;
    }
  }

  async getUser(id: string) {
    const user = await this.db.user.findUnique({ where: { id } });
    if (!user) throw BillingErrors.userNotFound(id);
    return renderUser(user);
  }

  async createOrganization(name: string) {
    const org = await this.db.organization.create({ data: { name } });
    return { id: org.id, name: org.name, created_at: org.createdAt.toISOString() };
  }

  async getOrganization(id: string) {
    const org = await this.db.organization.findUnique({ where: { id } });
    if (!org) throw BillingErrors.organizationNotFound(id);
    return { id: org.id, name: org.name, created_at: org.createdAt.toISOString() };
  }

  async addMember(organizationId: string, userId: string) {
    await this.getOrganization(organizationId);
    await this.getUser(userId);
    const m = await this.db.membership.upsert({
      where: { organizationId_userId: { organizationId, userId } },
      create: { organizationId, userId },
      update: {},
    });
    return { organization_id: m.organizationId, user_id: m.userId, created_at: m.createdAt.toISOString() };
  }

  /**
   * Adds prepaid credit. Idempotent on (organization, reference): the same reference and amount replays
   * the original entry; the same reference with another amount is refused.
   */
  async credit(organizationId: string, amount: number, reference: string): Promise<{ entry: LedgerEntryDto; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.$transaction(async (tx) => {
          const existing = await tx.credit.findUnique({ where: { organizationId_reference: { organizationId, reference } } });
          if (existing) {
            if (existing.amount !== BigInt(amount)) throw BillingErrors.creditReferenceReused(reference);
            const entry = await tx.ledgerEntry.findUniqueOrThrow({ where: { id: existing.ledgerEntryId } });
            return { entry: renderLedgerEntry(entry), created: false };
          }
          const rows = await tx.$queryRaw<{ balance: bigint; reserved: bigint }[]>`
            UPDATE organizations SET balance = balance + ${BigInt(amount)} WHERE id = ${organizationId}::uuid
            RETURNING balance, reserved`;
          const org = rows[0];
          if (!org) throw BillingErrors.organizationNotFound(organizationId);
          const entry = await tx.ledgerEntry.create({
            data: {
              organizationId,
              kind: "credit",
              amount: BigInt(amount),
              balanceAfter: org.balance,
              reservedAfter: org.reserved,
              reference,
            },
          });
          await tx.credit.create({ data: { organizationId, reference, amount: BigInt(amount), ledgerEntryId: entry.id } });
          return { entry: renderLedgerEntry(entry), created: true };
        });
      } catch (e) {
        // A concurrent credit with the same reference won the race; the next attempt replays it.
        if (attempt === 0 && isUniqueViolation(e)) continue;
        throw e;
      }
    }
  }

  async balance(organizationId: string): Promise<BalanceResponse> {
    const org = await this.db.organization.findUnique({ where: { id: organizationId } });
    if (!org) throw BillingErrors.organizationNotFound(organizationId);
    return {
      organization_id: org.id,
      balance_microrub: toMicrorub(org.balance),
      reserved_microrub: toMicrorub(org.reserved),
      available_microrub: toMicrorub(org.balance - org.reserved),
    };
  }

  /** Newest first; `cursor` is the id of the last entry of the previous page. */
  async ledger(organizationId: string, limit: number, cursor?: number) {
    await this.getOrganization(organizationId);
    const rows = await this.db.ledgerEntry.findMany({
      where: { organizationId, ...(cursor !== undefined ? { id: { lt: BigInt(cursor) } } : {}) },
      orderBy: { id: "desc" },
      take: limit + 1,
    });
    const page = rows.slice(0, limit).map(renderLedgerEntry);
    const hasMore = rows.length > limit;
    return {
      object: "list" as const,
      data: page,
      has_more: hasMore,
      next_cursor: hasMore ? String(page[page.length - 1]!.id) : null,
    };
  }
}

function renderUser(u: { id: string; email: string; createdAt: Date }) {
  return { id: u.id, email: u.email, created_at: u.createdAt.toISOString() };
}

export function renderLedgerEntry(e: {
  id: bigint;
  organizationId: string;
  keyId: string | null;
  holdId: string | null;
  kind: string;
  amount: bigint;
  balanceAfter: bigint;
  reservedAfter: bigint;
  reference: string | null;
  createdAt: Date;
}): LedgerEntryDto {
  return {
    id: toMicrorub(e.id),
    object: "ledger_entry",
    organization_id: e.organizationId,
    key_id: e.keyId,
    hold_id: e.holdId,
    kind: e.kind,
    amount_microrub: toMicrorub(e.amount),
    balance_after_microrub: toMicrorub(e.balanceAfter),
    reserved_after_microrub: toMicrorub(e.reservedAfter),
    reference: e.reference,
    created_at: e.createdAt.toISOString(),
  };
}

export function isUniqueViolation(e: unknown): boolean {
  return e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002";
}
