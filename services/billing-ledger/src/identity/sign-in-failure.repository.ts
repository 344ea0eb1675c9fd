import type { Db } from "../db";

/**
 * Failed sign-ins, one row each. An attempt is written before its password is checked (and deleted
 * when it succeeds), so concurrent guesses count against each other instead of all passing the check
 * at once while their hashes are computed.
 */
export class SignInFailureRepository {
  constructor(private readonly db: Db) {}

  async record(email: string, address: string, at: Date): Promise<bigint> {
    const row = await this.db.signInFailure.create({ data: { email, address, createdAt: at }, select: { id: true } });
    return row.id;
  }

  /**
   * Attempts of the account and of the address within the window, up to and including attempt `upTo`
   * (the caller's own), and when the oldest of each leaves the window.
   */
  async countSince(
    email: string,
    address: string,
    since: Date,
    upTo: bigint,
  ): Promise<{ account: number; address: number; accountOldest: Date | null; addressOldest: Date | null }> {
    const rows = await this.db.$queryRaw<{ account: number; address: number; account_oldest: Date | null; address_oldest: Date | null }[]>`
      SELECT count(*) FILTER (WHERE email = ${email})::int AS account,
             count(*) FILTER (WHERE address = ${address})::int AS address,
             min(created_at) FILTER (WHERE email = ${email}) AS account_oldest,
             min(created_at) FILTER (WHERE address = ${address}) AS address_oldest
      FROM sign_in_failures
      WHERE (email = ${email} OR address = ${address}) AND created_at > ${since} AND id <= ${upTo}`;
    const r = rows[0];
    return { account: r?.account ?? 0, address: r?.address ?? 0, accountOldest: r?.account_oldest ?? null, addressOldest: r?.address_oldest ?? null };
  }

  async delete(id: bigint): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { id } });
  }

  /** A successful sign-in clears the account's count (not the address's: one success does not vouch for it). */
  async clearAccount(email: string): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { email } });
  }

  async purgeBefore(before: Date): Promise<void> {
    await this.db.signInFailure.deleteMany({ where: { createdAt: { lt: before } } });
  }
}
