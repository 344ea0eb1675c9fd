import { createDatabase as createServiceDatabase, type Database } from "@meter/service-kit";
import { PrismaClient } from "./generated/prisma/client";

export type Db = PrismaClient;
export type FilesDatabase = Database<PrismaClient>;

export function createDatabase(url: string, poolSize = 10, onIdleError?: (error: Error) => void): FilesDatabase {
  return createServiceDatabase(PrismaClient, { url, poolSize, ...(onIdleError ? { onIdleError } : {}) });
}
