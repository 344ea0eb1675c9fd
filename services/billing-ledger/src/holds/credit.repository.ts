import { isUniqueViolation, type Db } from "../db";
import type { LedgerEntry } from "../generated/prisma/client";

/** What a credit came to: the entry it wrote or replayed, or why nothing was written. */
export type CreditOutcome = { outcome: "credited" | "replayed"; entry: LedgerEntry } | { outcome: "reference_reused" } | { outcome: "no_organization" };

/**
 * Credits: the second way money moves (apply_hold_ops, in hold-ops.repository.ts, is the first). One
 * transaction raises the balance, writes the `credit` ledger entry and records the reference, so a
 * reference is credited once. A credit that covers what a recovered charge left owed clears `owes`, and
 * the database holds the organization to balance >= reserved again.
 */
export class CreditRepository {
  constructor(private readonly db: Db) {}

  async credit(organizationId: string, amount: bigint, reference: string): Promise<CreditOutcome> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.$transaction(async (tx): Promise<CreditOutcome> => {
          const existing = await tx.credit.findUnique({ where: { organizationId_reference: { organizationId, reference } } });
          if (existing) {
            if (existing.amount !== amount) return { outcome: "reference_reused" };
            return {
              outcome: "replayed",
              entry: await tx.ledgerEntry.findUniqueOrThrow({ where: { organizationId_id: { organizationId, id: existing.ledgerEntryId } } }),
            };
          }
          const rows = await tx.$queryRaw<{ balance: bigint; reserved: bigint }[]>`
            UPDATE organizations SET balance = balance + ${amount}, owes = owes AND balance + ${amount} < reserved
            WHERE id = ${organizationId}::uuid
            RETURNING balance, reserved`;
          const org = rows[0];
          if (!org) return { outcome: "no_organization" };
          const entry = await tx.ledgerEntry.create({
            data: { organizationId, kind: "credit", amount, balanceAfter: org.balance, reservedAfter: org.reserved, reference },
          });
          await tx.credit.create({ data: { organizationId, reference, amount, ledgerEntryId: entry.id } });
          return { outcome: "credited", entry };
        });
      } catch (e) {
        // A concurrent credit with the same reference won the race; the next attempt replays it.
        if (attempt === 0 && isUniqueViolation(e)) continue;
        throw e;
      }
    }
  }
}
