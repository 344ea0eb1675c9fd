import { PrismaPg } from "@prisma/adapter-pg";
import { Pool, types, type PoolClient } from "pg";
import { mark, timingsEnabled } from "./timing/request-timings";

/** PostgreSQL's `date`: a calendar day, with no time or zone to shift it. */
const DATE_OID = 1082;

/** A service's database as pg alone: for services whose every statement is raw SQL (see pg-row.ts). */
export interface PgDatabase {
  pool: Pool;
  close(): Promise<void>;
}

/**
 * A service's database: its generated Prisma client and, on the same connections, a pg pool for the
 * few statements on every request's path (raw SQL through pg costs a fraction of a Prisma query's
 * CPU, which is what limits throughput on a small machine).
 */
export interface Database<P> extends PgDatabase {
  prisma: P;
}

/** Where a pool connects, and as what: `applicationName` names its sessions (pg_stat_activity, audit triggers). */
export interface PoolOptions {
  url: string;
  poolSize?: number;
  onIdleError?: (error: Error) => void;
  applicationName?: string;
}

export function createDatabase<P extends { $disconnect(): Promise<unknown> }>(
  PrismaClient: new (options: { adapter: PrismaPg }) => P,
  opts: PoolOptions,
): Database<P> {
  const pool = createPool(opts);
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

/** The pool only, with no Prisma client built: what a service that never queries through Prisma needs. */
export function createPgDatabase(opts: PoolOptions): PgDatabase {
  const pool = createPool(opts);
  return { pool, close: () => pool.end() };
}

function createPool(opts: PoolOptions): Pool {
  const pool = new Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    ...(opts.applicationName ? { application_name: opts.applicationName } : {}),
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
  if (timingsEnabled()) timePoolQueries(pool);
  return pool;
}

/**
 * The benchmark's waterfall (METER_TIMINGS_DIR): each pool.query of a request marked by its first
 * word, with the moment it got a connection from the pool (`db.acquired`) between start and end.
 */
function timePoolQueries(pool: Pool): void {
  pool.on("acquire", () => mark("db.acquired"));
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (typeof args[args.length - 1] === "function") return query(...args);
    const text = typeof args[0] === "string" ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? "");
    const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? "query";
    mark(`db.${verb}.start`);
    return (query(...args) as Promise<unknown>).finally(() => mark(`db.${verb}.end`));
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

/** Raw statements in Prisma's calling shape, so code written against it runs on pg alone. */
export interface RawSql {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

export interface RawSqlDb extends RawSql {
  /** One transaction on one connection; rolled back when `fn` throws. */
  $transaction<R>(fn: (tx: RawSql) => Promise<R>, options?: { timeout?: number; synchronousCommit?: boolean }): Promise<R>;
}

/**
 * The pool as a RawSqlDb: what the outbox relay needs, without Prisma's interactive transaction, whose
 * engine round trips cost more CPU than the relay's own statements (it runs after every paid request).
 * `timeout` bounds how long the transaction may sit idle between statements (PostgreSQL ends the
 * session and its locks then), as Prisma's transaction timeout does; `synchronousCommit: false` is for
 * a transaction whose loss in a crash is harmless (it is done again).
 */
export function rawSqlOf(pool: Pool): RawSqlDb {
  const on = (c: Pool | PoolClient): RawSql => ({
    async $queryRawUnsafe<T>(query: string, ...values: unknown[]) {
      return (await c.query(query, values)).rows as T;
    },
    async $executeRawUnsafe(query: string, ...values: unknown[]) {
      return (await c.query(query, values)).rowCount ?? 0;
    },
  });
  return {
    ...on(pool),
    async $transaction<R>(fn: (tx: RawSql) => Promise<R>, options: { timeout?: number; synchronousCommit?: boolean } = {}): Promise<R> {
      const client = await pool.connect();
      let broken: unknown;
      try {
        // One round trip: the settings travel with BEGIN (an integer of ours, never input).
        const begin = ["BEGIN"];
        if (options.timeout) begin.push(`SET LOCAL idle_in_transaction_session_timeout = ${Math.trunc(options.timeout)}`);
        // Off: the commit does not wait for its WAL flush (lost in a crash, never half applied).
        if (options.synchronousCommit === false) begin.push("SET LOCAL synchronous_commit = off");
        await client.query(begin.join("; "));
        const result = await fn(on(client));
        await client.query("COMMIT");
        return result;
      } catch (e) {
        await client.query("ROLLBACK").catch((rollbackError: unknown) => (broken = rollbackError));
        throw e;
      } finally {
        // A connection whose rollback failed is in an unknown state: it leaves the pool.
        client.release(broken instanceof Error ? broken : undefined);
      }
    },
  };
}
