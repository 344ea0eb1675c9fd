import { createPgDatabase, type PgDatabase } from "@meter/service-kit";

/**
 * The pool only: every statement here is raw SQL on pg, so no Prisma client is built. schema.prisma
 * stays the source of the migrations and of the row types (PgRow over its generated models).
 */
export type MediaJobsDatabase = PgDatabase;

export function createDatabase(url: string, poolSize: number, onIdleError?: (error: Error) => void): MediaJobsDatabase {
  return createPgDatabase({ url, poolSize, ...(onIdleError ? { onIdleError } : {}) });
}
