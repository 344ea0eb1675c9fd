import { randomBytes } from "node:crypto";
import { Client, Pool } from "pg";
import { rawSqlOf } from "@meter/service-kit";
import type { OutboxDb } from "../../src";

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
  /** The Prisma-shaped handle the relay takes, over pg (as the services give it). */
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
  // As the services' pools do: an idle connection that dies (a loaded server, a drop) leaves the pool
  // instead of ending the test process with an unhandled error.
  pool.on("error", () => undefined);
  await pool.query(OUTBOX_TABLE_SQL);
  return {
    pool,
    db: rawSqlOf(pool),
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
