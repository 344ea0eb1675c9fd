import { randomBytes } from "node:crypto";
import { dropDatabase, ensureDatabase, withDatabaseName } from "./postgres";

/** The pid tells which process left a shadow database behind, should one ever survive a crash. */
export function shadowDatabasePrefix(): string {
  return `prisma_shadow_${process.pid}_`;
}

/**
 * Runs `work` against a fresh, uniquely named database on the server of `serverUrl`, then drops it.
 *
 * We make our own instead of using @prisma/adapter-pg's `connectToShadowDb`: that one passes
 * `{ ...config, database }` to pg, where a `connectionString` wins over `database`, so it
 * replays the migrations into the main database.
 */
export async function withShadowDatabase<T>(serverUrl: string, work: (url: string) => Promise<T>): Promise<T> {
  const url = withDatabaseName(serverUrl, `${shadowDatabasePrefix()}${randomBytes(6).toString("hex")}`);
  await ensureDatabase(url);
  try {
    return await work(url);
  } finally {
    await dropDatabase(url);
  }
}
