import { randomBytes } from "node:crypto";
import { Client, Pool, type PoolClient } from "pg";
import type { OutboxDb, SqlExecutor } from "../../src";

/** The table as the README's Prisma model creates it (Prisma names the index itself). */
export const OUTBOX_TABLE_SQL = `
  CREATE TABLE outbox_messages (
    id           bigserial PRIMARY KEY,
    message_id   uuid NOT NULL UNIQUE,
    routing_key  text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz(3) NOT NULL DEFAULT now(),
    published_at timestamptz(3),
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text,
    available_at timestamptz(3) NOT NULL DEFAULT now()
  );
  CREATE INDEX outbox_messages_published_at_available_at_id_idx ON outbox_messages (published_at, available_at, id);`;

export interface OutboxDatabase {
  pool: Pool;
  /** The Prisma-shaped handle the relay takes, over pg. */
  db: OutboxDb;
  drop(): Promise<void>;
}

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A throwaway database holding only the outbox table. */
export async function createOutboxDatabase(): Promise<OutboxDatabase> {
  const name = `t_${process.env.METER_TEST_RUN ?? "local"}_outbox_${randomBytes(5).toString("hex")}`;
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = new Pool({ connectionString: url.href, max: 10 });
  await pool.query(OUTBOX_TABLE_SQL);
  return {
    pool,
    db: pgOutboxDb(pool),
    async drop() {
      await pool.end();
      await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

async function admin(sql: string): Promise<void> {
  const client = new Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function executor(queryable: Pool | PoolClient): SqlExecutor {
  return {
    async $queryRawUnsafe<T>(query: string, ...values: unknown[]): Promise<T> {
      const result = await queryable.query(query, values);
      return result.rows as T;
    },
    async $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number> {
      const result = await queryable.query(query, values);
      return result.rowCount ?? 0;
    },
  };
}

function pgOutboxDb(pool: Pool): OutboxDb {
  return {
    ...executor(pool),
    async $transaction<R>(fn: (tx: SqlExecutor) => Promise<R>): Promise<R> {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn(executor(client));
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
  };
}
