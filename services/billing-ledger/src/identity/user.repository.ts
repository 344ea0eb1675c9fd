import { CabinetLocale } from "@meter/contracts";
import type { Db } from "../db";
import type { DbClient } from "./cabinet-session.repository";

/** Users as sign-in sees them: their password hash and when they last signed in. */
export class UserRepository {
  constructor(private readonly db: Db) {}

  /** Runs `work` in one transaction: the writes given its client join it. */
  transaction<T>(work: (tx: DbClient) => Promise<T>): Promise<T> {
    return this.db.$transaction(work);
  }

  async credentials(email: string): Promise<{ id: string; passwordHash: string | null } | undefined> {
    return (await this.db.user.findUnique({ where: { email }, select: { id: true, passwordHash: true } })) ?? undefined;
  }

  /** The signed-in user as the cabinet shows them; the session proves they exist. */
  async contact(id: string): Promise<{ id: string; email: string; locale: CabinetLocale | null }> {
    const user = await this.db.user.findUniqueOrThrow({ where: { id }, select: { id: true, email: true, locale: true } });
    // Only a language the cabinet still speaks: one dropped since reads as not chosen.
    return { ...user, locale: CabinetLocale.safeParse(user.locale).data ?? null };
  }

  /** The cabinet's language the user chose (null: the browser's decides again). */
  async setLocale(id: string, locale: CabinetLocale | null): Promise<void> {
    await this.db.user.update({ where: { id }, data: { locale } });
  }

  async signedIn(id: string, at: Date): Promise<void> {
    await this.db.user.update({ where: { id }, data: { lastSignInAt: at } });
  }

  /** A member's own change of password (signed in already: not a sign-in). */
  async changePassword(id: string, passwordHash: string, at: Date, client: DbClient = this.db): Promise<void> {
    await client.user.update({ where: { id }, data: { passwordHash, passwordSetAt: at } });
  }

  /** A password set (an accepted invitation) is a sign-in too. */
  async setPassword(id: string, passwordHash: string, at: Date, client: DbClient = this.db): Promise<void> {
    await client.user.update({ where: { id }, data: { passwordHash, passwordSetAt: at, lastSignInAt: at } });
  }
}
