import { PrismaPg } from "@prisma/adapter-pg";
import { Pool } from "pg";
import { PrismaClient } from "./generated/prisma/client";

export type Db = PrismaClient;

export interface Database {
  prisma: Db;
  /**
   * The same connections, for the few statements on every request's path: raw SQL through pg costs a
   * fraction of a Prisma query's CPU, which is what limits throughput on a small machine.
   */
  pool: Pool;
  close(): Promise<void>;
}

export function createDatabase(url: string, poolSize = 10, onIdleError?: (error: Error) => void): Database {
  const pool = new Pool({ connectionString: url, max: poolSize });
  // An idle connection can die (a database restart, an administrator): pg then drops it from the pool.
  // Without a listener that error would end the process.
  pool.on("error", (error) => onIdleError?.(error));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}
