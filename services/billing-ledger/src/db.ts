import { createDatabase as createServiceDatabase, type Database } from "@meter/service-kit";
import { Prisma, PrismaClient } from "./generated/prisma/client";

export type Db = PrismaClient;
export type BillingDatabase = Database<PrismaClient>;

/**
 * What billing's sessions call themselves (application_name): pg_stat_activity tells its connections
 * apart, and the test suites' money-path check counts only billing's own writes (docs/scale.md).
 */
export const APPLICATION_NAME = "billing-ledger";

export function createDatabase(url: string, poolSize = 10, onIdleError?: (error: Error) => void, applicationName: string = APPLICATION_NAME): BillingDatabase {
  return createServiceDatabase(PrismaClient, { url, poolSize, applicationName, ...(onIdleError ? { onIdleError } : {}) });
}

/** A unique constraint refused the write (Prisma's P2002): someone else wrote the same key first. */
export function isUniqueViolation(e: unknown): boolean {
  return e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002";
}
