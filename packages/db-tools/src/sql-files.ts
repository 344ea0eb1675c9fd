import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";

/**
 * A service's SQL functions, one per file in `prisma/sql/<name>.sql`, applied after its migrations the
 * way Flyway applies repeatable migrations: a file runs again whenever its text changes, so a function
 * has one place in the repository and a migration carries schema changes only.
 *
 * - A file is plain SQL that can run any number of times, without BEGIN or COMMIT of its own: `CREATE OR REPLACE FUNCTION`, or
 *   `DROP FUNCTION IF EXISTS <old signature>` before it when the signature changes (CREATE OR REPLACE
 *   cannot change arguments or result columns).
 * - Files run in name order, all changed ones in one transaction with their records: a deploy leaves
 *   either every new text or none. PL/pgSQL resolves the functions a body calls when it runs, not when
 *   it is created, so the order matters only for SQL-language bodies or types a file would create.
 * - `_meter_sql_files` records every (name, sha256) ever applied and when. A file runs when its hash is
 *   not the latest applied for its name, and every file runs again after a deploy that applied a
 *   migration (a migration may drop a function, to change a type its signature uses).
 * - A removed file leaves its function: drop it in a migration.
 */
export const SQL_FILES_TABLE = "_meter_sql_files";
const SQL_DIR = path.join("prisma", "sql");

export interface SqlFile {
  /** The file's name in `prisma/sql` (`apply_hold_ops.sql`). */
  name: string;
  sha256: string;
  text: string;
}

/** The image's SQL files, sorted by name; none when the service has no `prisma/sql`. */
export async function localSqlFiles(serviceDir: string): Promise<SqlFile[]> {
  const dir = path.join(serviceDir, SQL_DIR);
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith(".sql")).sort();
  return Promise.all(
    names.map(async (name) => {
      const text = await readFile(path.join(dir, name), "utf8");
      return { name, sha256: createHash("sha256").update(text).digest("hex"), text };
    }),
  );
}

export interface ApplySqlFilesOptions {
  serviceDir: string;
  databaseUrl: string;
  /** Every file, changed or not (after a migration ran). */
  all?: boolean;
}

/** Applies the service's changed SQL files (or all of them); returns the names it applied, in order. */
export async function applySqlFiles({ serviceDir, databaseUrl, all = false }: ApplySqlFilesOptions): Promise<string[]> {
  const files = await localSqlFiles(serviceDir);
  if (files.length === 0) return [];
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Two first deploys racing: the loser's CREATE fails with unique_violation (23505) on the table's type.
    await client
      .query(
        `CREATE TABLE IF NOT EXISTS ${SQL_FILES_TABLE} (name text NOT NULL, sha256 text NOT NULL, applied_at timestamptz NOT NULL, PRIMARY KEY (name, sha256))`,
      )
      .catch((e: { code?: string }) => (e.code === "23505" ? undefined : Promise.reject(e)));
    await client.query("BEGIN");
    try {
      // Two deploys at once without the advisory lock (tests, `pnpm db deploy`): the second waits here,
      // then finds the first one's records and applies nothing.
      await client.query(`LOCK TABLE ${SQL_FILES_TABLE} IN EXCLUSIVE MODE`);
      const latest = new Map((await client.query<{ name: string; sha256: string }>(LATEST_SQL)).rows.map((r) => [r.name, r.sha256]));
      const changed = files.filter((file) => all || latest.get(file.name) !== file.sha256);
      for (const file of changed) {
        await client.query(file.text).catch((error: Error) => Promise.reject(new Error(`${SQL_DIR}/${file.name}: ${error.message}`, { cause: error })));
        // clock_timestamp(), not now(): taken after the lock, so applied_at follows the order of deploys.
        await client.query(
          `INSERT INTO ${SQL_FILES_TABLE} (name, sha256, applied_at) VALUES ($1, $2, clock_timestamp())
           ON CONFLICT (name, sha256) DO UPDATE SET applied_at = EXCLUDED.applied_at`,
          [file.name, file.sha256],
        );
      }
      await client.query("COMMIT");
      return changed.map((file) => file.name);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  } finally {
    await client.end();
  }
}

const LATEST_SQL = `SELECT DISTINCT ON (name) name, sha256 FROM ${SQL_FILES_TABLE} ORDER BY name, applied_at DESC`;

/**
 * The image's SQL files whose text was never applied to the database, for a pod's wait: a file applied
 * once and replaced since by a later release's text counts as applied, as a later migration does (the
 * previous release keeps running on the next one's functions while it rolls, or after a rollback).
 */
export async function unappliedSqlFiles(client: pg.Client, serviceDir: string): Promise<string[]> {
  const files = await localSqlFiles(serviceDir);
  if (files.length === 0) return [];
  const table = await client.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [SQL_FILES_TABLE]);
  if (!table.rows[0]?.present) return files.map((file) => file.name);
  const { rows } = await client.query<{ name: string; sha256: string }>(`SELECT name, sha256 FROM ${SQL_FILES_TABLE}`);
  const applied = new Set(rows.map((r) => `${r.name} ${r.sha256}`));
  return files.filter((file) => !applied.has(`${file.name} ${file.sha256}`)).map((file) => file.name);
}
