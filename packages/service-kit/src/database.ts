import { PrismaPg } from "@prisma/adapter-pg";
import { Pool, types } from "pg";

/** PostgreSQL's `date`: a calendar day, with no time or zone to shift it. */
const DATE_OID = 1082;

/**
 * A service's database: its generated Prisma client and, on the same connections, a pg pool for the
 * few statements on every request's path (raw SQL through pg costs a fraction of a Prisma query's
 * CPU, which is what limits throughput on a small machine).
 */
export interface Database<P> {
  prisma: P;
  pool: Pool;
  close(): Promise<void>;
}

export function createDatabase<P extends { $disconnect(): Promise<unknown> }>(
  PrismaClient: new (options: { adapter: PrismaPg }) => P,
  opts: { url: string; poolSize?: number; onIdleError?: (error: Error) => void },
): Database<P> {
  const pool = new Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    // A `date` stays the database's 'YYYY-MM-DD': pg's default makes it a local midnight, which
    // toISOString() moves to the day before wherever the process runs east of UTC.
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === DATE_OID ? (v: string) => v : types.getTypeParser(oid, format)) as typeof types.getTypeParser,
    },
  });
  // An idle connection can die (a database restart, an administrator): pg then drops it from the pool.
  // Without a listener that error would end the process.
  pool.on("error", (error) => opts.onIdleError?.(error));
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

/**
 * Deletes the rows of `table` that `where` selects (its parameters from $1), a bounded chunk per
 * statement, so a purge of history never holds locks long or builds one huge transaction. `where`
 * is the caller's own SQL, never input. Returns how many rows went.
 */
export async function deleteInChunks(pool: Pool, table: string, where: string, params: unknown[], chunk = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await pool.query(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${where} LIMIT ${Math.trunc(chunk)})`, params);
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < chunk) return total;
  }
}
