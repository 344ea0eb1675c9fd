import { readdir } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { deployMigrations } from "./migrations";
import { ensureDatabase, redactUrl } from "./postgres";

/**
 * A deployed service's migration step (its image's `node dist/migrate.js`), run by an initContainer
 * before each new version of the service starts:
 *
 * - `deploy` (the API Deployment): applies the image's pending migrations as the migration role
 *   (`<PREFIX>_MIGRATION_DATABASE_URL`, the owner of the schema), under an advisory lock, so several
 *   replicas starting at once apply each migration once and the others wait and find nothing to do.
 * - `wait` (a worker of the same service): waits, as the runtime role (`<PREFIX>_DATABASE_URL`, which
 *   may only read and write rows), until every migration its image carries is applied. The worker
 *   needs no right to change the schema.
 */

/** Not Prisma's own lock id (72707369), which its engine may take on another connection: that would deadlock. */
const MIGRATION_LOCK_ID = 4_812_215_369;
const WAIT_POLL_MS = 2000;
const DEFAULT_WAIT_TIMEOUT_MS = 10 * 60_000;

export interface MigrationCommandOptions {
  /** `TEXT`, `BILLING_LEDGER`: the prefix of the service's settings. */
  prefix: string;
  /** Where `prisma/migrations` is (the image keeps the repository's layout). */
  serviceDir: string;
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** The entry of `dist/migrate.js`: `deploy` (default) or `wait`; resolves to the exit code. */
export async function runMigrationCommand(opts: MigrationCommandOptions): Promise<number> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const mode = opts.argv[0] ?? "deploy";
  if (mode === "deploy") {
    const url = required(opts.env, `${opts.prefix}_MIGRATION_DATABASE_URL`);
    const applied = await deployWithLock(opts.serviceDir, url);
    log(applied.length > 0 ? `applied ${applied.join(", ")} on ${redactUrl(url)}` : `no pending migrations on ${redactUrl(url)}`);
    return 0;
  }
  if (mode === "wait") {
    const url = required(opts.env, `${opts.prefix}_DATABASE_URL`);
    const timeoutMs = Number(opts.env.MIGRATION_WAIT_TIMEOUT_MS) || DEFAULT_WAIT_TIMEOUT_MS;
    await waitForMigrations(opts.serviceDir, url, timeoutMs, log);
    log(`every migration of this image is applied on ${redactUrl(url)}`);
    return 0;
  }
  log(`usage: node dist/migrate.js [deploy|wait] (got ${mode})`);
  return 2;
}

function required(env: NodeJS.ProcessEnv, key: string): string {
  const value = env[key];
  if (!value) throw new Error(`${key} is not set`);
  return value;
}

/** `prisma migrate deploy`, serialised across every process migrating the same database. */
export async function deployWithLock(serviceDir: string, databaseUrl: string): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
    return await deployMigrations({ serviceDir, databaseUrl });
  } finally {
    // Ending the session releases the lock as well; unlocking first lets a waiter go at once.
    await lock.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lock.end();
  }
}

/** The migration folders this image carries, by name (what `_prisma_migrations.migration_name` holds). */
export async function localMigrationNames(serviceDir: string): Promise<string[]> {
  const entries = await readdir(path.join(serviceDir, "prisma", "migrations"), { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The migrations that are missing (not applied, or failed) on the database, empty when it is up to date. */
export async function pendingMigrations(serviceDir: string, databaseUrl: string): Promise<string[]> {
  const wanted = await localMigrationNames(serviceDir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const table = await client.query<{ present: boolean }>("SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present");
    if (!table.rows[0]?.present) return wanted;
    const { rows } = await client.query<{ migration_name: string }>(
      "SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL",
    );
    const applied = new Set(rows.map((r) => r.migration_name));
    return wanted.filter((name) => !applied.has(name));
  } finally {
    await client.end();
  }
}

async function waitForMigrations(serviceDir: string, databaseUrl: string, timeoutMs: number, log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let missing: string[];
    try {
      missing = await pendingMigrations(serviceDir, databaseUrl);
    } catch (e) {
      // The database may not be reachable or created yet (first install): keep waiting.
      missing = [`(database not ready: ${(e as Error).message})`];
    }
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`migrations still missing after ${timeoutMs} ms: ${missing.join(", ")}`);
    log(`waiting for ${missing.join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
  }
}
