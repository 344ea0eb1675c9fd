import pg from "pg";
import type { Stage } from "./after-rollout";
import { deployMigrations, type Deployed } from "./migrations";
import { ensureDatabase, redactUrl } from "./postgres";
import { DEFAULT_SCHEMA_WAIT_MS, waitForSchema } from "./schema-wait";

/**
 * A deployed service's migration step (its image's `node dist/migrate.js`, docs/deploy.md, Migrations):
 *
 * - `deploy` (the release's migration Job, compose's `<service>-migrate`): applies the image's pending
 *   migrations but its after-rollout ones (after-rollout.ts; all of them on a new database), then its
 *   changed SQL files (`prisma/sql`, sql-files.ts), as the migration role
 *   (`<PREFIX>_MIGRATION_DATABASE_URL`, the owner of the schema), under an advisory lock, so two runs at
 *   once apply each once and the other finds nothing to do.
 * - `finish` (once no pod of the previous release runs: docs/deploy.md, "After the rollout"): the same,
 *   with the after-rollout migrations.
 * - `wait` (the initContainer of every pod of the service, API and worker): waits, as the runtime role
 *   (`<PREFIX>_DATABASE_URL`, which may only read and write rows), until every migration (but the
 *   after-rollout ones) and SQL file its image carries is applied, at most `MIGRATION_WAIT_TIMEOUT_MS`. No pod needs the right to change the schema.
 */

/** Not Prisma's own lock id (72707369), which its engine may take on another connection: that would deadlock. */
const MIGRATION_LOCK_ID = 4_812_215_369;

export interface MigrationCommandOptions {
  /** `TEXT`, `BILLING_LEDGER`: the prefix of the service's settings. */
  prefix: string;
  /** Where `prisma/migrations` is (the image keeps the repository's layout). */
  serviceDir: string;
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** The entry of `dist/migrate.js`: `deploy` (default), `finish` or `wait`; resolves to the exit code. */
export async function runMigrationCommand(opts: MigrationCommandOptions): Promise<number> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const mode = opts.argv[0] ?? "deploy";
  if (mode === "deploy" || mode === "finish") {
    const url = required(opts.env, `${opts.prefix}_MIGRATION_DATABASE_URL`);
    await waitForServer(url, Number(opts.env.MIGRATION_CONNECT_TIMEOUT_MS) || DEFAULT_CONNECT_TIMEOUT_MS, log);
    const deployed = await deployWithLock(opts.serviceDir, url, mode === "deploy" ? "rollout" : "all");
    log(`${describeDeployed(deployed)} on ${redactUrl(url)}`);
    return 0;
  }
  if (mode === "wait") {
    const url = required(opts.env, `${opts.prefix}_DATABASE_URL`);
    const timeoutMs = Number(opts.env.MIGRATION_WAIT_TIMEOUT_MS) || DEFAULT_SCHEMA_WAIT_MS;
    await waitForSchema({ serviceDir: opts.serviceDir, databaseUrl: url, timeoutMs, log });
    return 0;
  }
  log(`usage: node dist/migrate.js [deploy|finish|wait] (got ${mode})`);
  return 2;
}

/** Within the Job's deadline (600 s): a first install may start it before PostgreSQL accepts connections. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5 * 60_000;
const CONNECT_POLL_MS = 2000;

/** A server not answering yet (refused, unknown host, starting up) is waited for; anything else fails at once. */
const notAnsweringYet = (error: unknown): boolean => {
  const code = (error as { code?: string }).code ?? "";
  return !/^[0-9A-Z]{5}$/.test(code) || code === "57P03";
};

/** Waits until the database's server accepts connections, at most `timeoutMs`. */
export async function waitForServer(url: string, timeoutMs: number, log: (line: string) => void, pollMs = CONNECT_POLL_MS): Promise<void> {
  const started = Date.now();
  let said = false;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      return;
    } catch (error) {
      // A missing database is ensureDatabase's to create; a refused password is final.
      if (!notAnsweringYet(error)) return;
      if (Date.now() - started >= timeoutMs) throw new Error(`${redactUrl(url)} not reachable after ${timeoutMs / 1000} s: ${(error as Error).message}`);
      if (!said) log(`waiting for ${redactUrl(url)} to accept connections: ${(error as Error).message}`);
      said = true;
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function required(env: NodeJS.ProcessEnv, key: string): string {
  const value = env[key];
  if (!value) throw new Error(`${key} is not set`);
  return value;
}

/** `applied 2026..._x; SQL files a.sql, b.sql`, or `no pending migrations` when nothing was. */
export function describeDeployed({ migrations, sqlFiles }: Deployed): string {
  const parts = [...(migrations.length > 0 ? [`applied ${migrations.join(", ")}`] : []), ...(sqlFiles.length > 0 ? [`SQL files ${sqlFiles.join(", ")}`] : [])];
  return parts.length > 0 ? parts.join("; ") : "no pending migrations";
}

/** `prisma migrate deploy` and the SQL files, serialised across every process migrating the same database. */
export async function deployWithLock(serviceDir: string, databaseUrl: string, stage: Stage = "all"): Promise<Deployed> {
  await ensureDatabase(databaseUrl);
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
    return await deployMigrations({ serviceDir, databaseUrl, stage });
  } finally {
    // Ending the session releases the lock as well; unlocking first lets a waiter go at once.
    await lock.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lock.end();
  }
}
