import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { serviceDatabaseUrl, withDatabaseName } from "../../src";

export const FIXTURE_DIR = path.join(__dirname, "..", "fixtures", "sample");

/**
 * A database name nobody else uses, with the `t_<run>_` prefix of @meter/testing's test databases
 * (which depends on this package, so it is not imported here) so that leftovers are easy to find.
 */
export function scratchDatabaseUrl(label: string): string {
  const run = (process.env.METER_TEST_RUN ?? "local").toLowerCase().replace(/[^a-z0-9]+/g, "_");
  return withDatabaseName(serviceDatabaseUrl(FIXTURE_DIR), `t_${run}_dbtools_${label}_${randomBytes(4).toString("hex")}`);
}

export async function query<Row extends object>(url: string, sql: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

export async function databasesNamed(prefix: string): Promise<string[]> {
  const maintenance = withDatabaseName(serviceDatabaseUrl(FIXTURE_DIR), "postgres");
  const rows = await query<{ datname: string }>(maintenance, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [prefix]);
  return rows.map((row) => row.datname);
}
