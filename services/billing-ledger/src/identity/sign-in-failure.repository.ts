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

  async record(email: string, address: string, at: Date): Promise<bigint> {
    const row = await this.db.signInFailure.create({ data: { email, address, createdAt: at }, select: { id: true } });
    return row.id;
  }

  /** The failures of the account from the address, and of the address, since `since` and before attempt `id`. */
  async countBefore(email: string, address: string, since: Date, id: bigint): Promise<{ pair: FailureCount; address: FailureCount }> {
    const rows = await this.db.$queryRaw<{ pair: number; address: number; pair_last: Date | null; address_last: Date | null }[]>`
      SELECT count(*) FILTER (WHERE email = ${email})::int AS pair,
             count(*)::int AS address,
             max(created_at) FILTER (WHERE email = ${email}) AS pair_last,
             max(created_at) AS address_last
      FROM sign_in_failures
      WHERE address = ${address} AND created_at > ${since} AND id < ${id}`;
    const r = rows[0];
    return {
      pair: { failures: r?.pair ?? 0, last: r?.pair_last ?? null },
      address: { failures: r?.address ?? 0, last: r?.address_last ?? null },
    };
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
