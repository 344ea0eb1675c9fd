import { createDatabase as createServiceDatabase, type Database } from "@meter/service-kit";
import { Prisma, PrismaClient } from "./generated/prisma/client";

export type Db = PrismaClient;
export type BillingDatabase = Database<PrismaClient>;

export function createDatabase(url: string, poolSize = 10, onIdleError?: (error: Error) => void): BillingDatabase {
  return createServiceDatabase(PrismaClient, { url, poolSize, ...(onIdleError ? { onIdleError } : {}) });
}

/** A unique constraint refused the write (Prisma's P2002): someone else wrote the same key first. */
export function isUniqueViolation(e: unknown): boolean {
  return e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002";
}
