import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { dropDatabase, ensureDatabase, redactUrl } from "./postgres";

const run = promisify(execFile);

/** `pg_dump --format=custom` of one service's database into `file`: what `pg_restore` takes back. */
export async function backupDatabase(url: string, file: string): Promise<void> {
  await run("pg_dump", ["--format=custom", "--no-owner", "--file", file, "--dbname", url]).catch((e: unknown) => {
    throw new Error(`pg_dump of ${redactUrl(url)} failed: ${(e as { stderr?: string }).stderr ?? String(e)}`);
  });
}

/**
 * Restores one service's database from a `backupDatabase` file, the way docs/deploy.md does it: the
 * database is dropped (its connections closed) and created afresh, then `pg_restore` fills it. A fresh
 * database has a new OID, which is how a hold owner knows it was restored (its restore point).
 * Stop the service first; start it again after.
 */
export async function restoreDatabase(url: string, file: string): Promise<void> {
  await dropDatabase(url);
  await ensureDatabase(url);
  await run("pg_restore", ["--no-owner", "--exit-on-error", "--dbname", url, file]).catch((e: unknown) => {
    throw new Error(`pg_restore into ${redactUrl(url)} failed: ${(e as { stderr?: string }).stderr ?? String(e)}`);
  });
}
