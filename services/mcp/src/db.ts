import { createDatabase as createServiceDatabase, type Database } from "@meter/service-kit";
import { PrismaClient } from "./generated/prisma/client";

export type McpDatabase = Database<PrismaClient>;

export function createDatabase(url: string, poolSize: number, onIdleError?: (error: Error) => void): McpDatabase {
  return createServiceDatabase(PrismaClient, { url, poolSize, ...(onIdleError ? { onIdleError } : {}) });
}
