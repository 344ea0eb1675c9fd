import pg from "pg";

/** Pool options for the schema engine's connections: small (it runs one command at a time). */
export function enginePoolConfig(url: string): pg.PoolConfig {
  return { connectionString: url, max: 2 };
}

export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ""));
  if (!name) throw new Error(`The database URL names no database: ${redactUrl(url)}`);
  return name;
}

/** The same server and credentials, another database (query parameters kept). */
export function withDatabaseName(url: string, name: string): string {
  const next = new URL(url);
  next.pathname = `/${encodeURIComponent(name)}`;
  return next.toString();
}

/** For messages: never print a password. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** CREATE/DROP DATABASE cannot run inside the target database, so they go through `postgres`. */
async function withMaintenanceClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabaseName(url, "postgres") });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

const INVALID_CATALOG_NAME = "3D000";
const DUPLICATE_DATABASE = "42P04";
/** What a CREATE DATABASE racing another one for the same name gets instead of 42P04. */
const UNIQUE_VIOLATION = "23505";

const errorCode = (error: unknown): string | undefined => (error as { code?: string }).code;

/**
 * Creates the database named by `url` unless it exists. Returns true when it was created.
 * Connecting to it first means a role that may not open `postgres` can still deploy to an existing database.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const probe = new pg.Client({ connectionString: url });
  try {
    await probe.connect();
    return false;
  } catch (error) {
    if (errorCode(error) !== INVALID_CATALOG_NAME) throw error;
  } finally {
    await probe.end().catch(() => undefined);
  }
  return withMaintenanceClient(url, async (client) => {
    try {
      await client.query(`CREATE DATABASE ${quoteIdentifier(databaseName(url))}`);
      return true;
    } catch (error) {
      // Another process created it since the probe: that is what we wanted.
      if (errorCode(error) === DUPLICATE_DATABASE || errorCode(error) === UNIQUE_VIOLATION) return false;
      throw error;
    }
  });
}

/** Drops the database named by `url` if it exists, closing its open connections (PostgreSQL 13+). */
export async function dropDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  await withMaintenanceClient(url, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`));
}

/** The databases on `url`'s server whose names match the LIKE `pattern`, as URLs with `url`'s credentials, by name. */
export async function databasesLike(url: string, pattern: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: withDatabaseName(url, "postgres") });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname", [pattern]);
    return rows.map((r) => withDatabaseName(url, r.datname));
  } finally {
    await client.end();
  }
}
