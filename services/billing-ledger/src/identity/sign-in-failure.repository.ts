import type { Db } from "../db";

/** Failures within the window and when the latest of them was. */
export interface FailureCount {
  failures: number;
  last: Date | null;
}

/**
 * Failed sign-ins, one row each. An attempt is written before its password is checked (and deleted
 * when it succeeds or is refused unchecked), so concurrent guesses count against each other instead
 * of all passing the check at once while their hashes are computed.
 */
export class SignInFailureRepository {
  constructor(private readonly db: Db) {}

  /**
   * Writes attempt `at` and counts the failures of the account from the address, and of the address,
   * since `since` and before it. Under a lock of the address until commit: ids come from a sequence
   * before their rows commit, so without it an attempt could miss an earlier one still committing and
   * a burst of guesses get one more check than the policy allows.
   */
  async recordAndCountBefore(email: string, address: string, since: Date, at: Date): Promise<{ id: bigint; pair: FailureCount; address: FailureCount }> {
    return this.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", `billing.sign-in:${address}`);
      const { id } = await tx.signInFailure.create({ data: { email, address, createdAt: at }, select: { id: true } });
      const rows = await tx.$queryRaw<{ pair: number; address: number; pair_last: Date | null; address_last: Date | null }[]>`
        SELECT count(*) FILTER (WHERE email = ${email})::int AS pair,
               count(*)::int AS address,
               max(created_at) FILTER (WHERE email = ${email}) AS pair_last,
               max(created_at) AS address_last
        FROM sign_in_failures
        WHERE address = ${address} AND created_at > ${since} AND id < ${id}`;
      const r = rows[0];
      return {
        id,
        pair: { failures: r?.pair ?? 0, last: r?.pair_last ?? null },
        address: { failures: r?.address ?? 0, last: r?.address_last ?? null },
      };
    });
  }

  async delete(id: bigint): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { id } });
  }

  /**
   * A successful sign-in clears the account's failures from that address only: other addresses'
   * guesses stay slowed, and one success does not vouch for the address's guesses at other accounts.
   */
  async clearAccountAt(email: string, address: string): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { email, address } });
  }

  async purgeBefore(before: Date): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { createdAt: { lt: before } } });
  }
}
