import { existsSync } from "node:fs";
import path from "node:path";
import type pg from "pg";

/**
 * A migration folder holding this file is applied only after the rollout (docs/deploy.md, "After the
 * rollout"): it contracts the schema in a way the previous release's pods, which run beside this
 * release's during an upgrade or a rollback by pods, could not work on. The file says which of their
 * uses it waits out. This release's own code works on the schema before and after it.
 */
export const AFTER_ROLLOUT_FILE = "after-rollout.md";

/**
 * How far a deploy goes: `all` (a new database, `npm start`, tests, `pnpm db deploy`, the `finish` step
 * once no pod of the previous release runs) or `rollout` (the release's migration Job during an
 * upgrade: not the newest after-rollout migrations, from the first not applied yet).
 */
export type Stage = "all" | "rollout";

/** The migration folders of `migrationsDir` that wait for the rollout to end. */
export function afterRolloutFolders(migrationsDir: string, folders: readonly string[]): Set<string> {
  return new Set(folders.filter((folder) => existsSync(path.join(migrationsDir, folder, AFTER_ROLLOUT_FILE))));
}

/**
 * The migrations a rollout applies and its pods wait for: every folder, oldest first, but the newest
 * after-rollout ones (those no ordinary migration follows) from the first the database has not applied.
 * An after-rollout migration an ordinary one follows is a previous release's: its pods are gone, so the
 * next release's Job applies it, in order. A database with nothing applied is a first install, with no
 * earlier pods: all of them.
 */
export function rolloutMigrations(folders: readonly string[], afterRollout: ReadonlySet<string>, applied: ReadonlySet<string>): string[] {
  if (applied.size === 0) return [...folders];
  let newest = folders.length;
  while (newest > 0 && afterRollout.has(folders[newest - 1]!)) newest -= 1;
  const stop = folders.findIndex((folder, i) => i >= newest && !applied.has(folder));
  return stop < 0 ? [...folders] : folders.slice(0, stop);
}

/** A row of `_prisma_migrations`, as much of it as the deploy and the pods' wait read. */
export interface MigrationRow {
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

/** What `_prisma_migrations` records (nothing when the table is missing: a new database). */
export async function migrationHistory(client: pg.Client): Promise<MigrationRow[]> {
  const table = await client.query<{ present: boolean }>("SELECT to_regclass('_prisma_migrations') IS NOT NULL AS present");
  if (!table.rows[0]?.present) return [];
  return (await client.query<MigrationRow>("SELECT migration_name, finished_at, rolled_back_at, logs FROM _prisma_migrations")).rows;
}

/** The migrations the history records as applied: finished, and not rolled back. */
export function appliedMigrations(rows: readonly MigrationRow[]): Set<string> {
  return new Set(rows.filter((r) => r.finished_at !== null && r.rolled_back_at === null).map((r) => r.migration_name));
}
