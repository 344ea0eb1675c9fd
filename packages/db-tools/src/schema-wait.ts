import { readdir } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { afterRolloutFolders, appliedMigrations, migrationHistory, rolloutMigrations } from "./after-rollout";
import { databaseName, redactUrl } from "./postgres";
import { unappliedSqlFiles } from "./sql-files";

/**
 * A pod of a new version starts only once its database's schema is at that version: every migration
 * its image carries is recorded as applied in `_prisma_migrations`, and every SQL file's text in
 * `_meter_sql_files` (by the release's migration Job, as the owner). It reads those tables as the
 * runtime role, which may not change the schema.
 */

export interface SchemaWaitOptions {
  /** Where `prisma/migrations` is (the image keeps the repository's layout). */
  serviceDir: string;
  /** The runtime role's URL: reading `_prisma_migrations` is all this needs. */
  databaseUrl: string;
  /** Gives up after this long, with an error naming what is missing. */
  timeoutMs: number;
  pollMs?: number;
  /** How often to say it is still waiting. */
  progressEveryMs?: number;
  log?: (line: string) => void;
}

export interface SchemaState {
  /**
   * This image's migrations the database has not applied (or failed), oldest first; not its
   * after-rollout ones (after-rollout.ts), which run once its pods have replaced the previous release's.
   */
  missing: string[];
  /** Of those, the ones that failed, with the first line of their error (Prisma's `logs`). */
  failed: { name: string; error: string }[];
  /** This image's migrations that wait for the end of the rollout (`finish`) and are not applied yet. */
  afterRollout: string[];
  /** Applied migrations this image does not carry: a later release's (this image is a rollback). */
  newer: string[];
  /** This image's SQL files (`prisma/sql`) whose text was never applied. */
  sqlFiles: string[];
}

/** How long a pod waits by default (`MIGRATION_WAIT_TIMEOUT_MS`): longer than a migration Job may run. */
export const DEFAULT_SCHEMA_WAIT_MS = 15 * 60_000;
const DEFAULT_POLL_MS = 2000;
const DEFAULT_PROGRESS_MS = 30_000;

/** The migration folders this image carries, by name (what `_prisma_migrations.migration_name` holds), oldest first. */
export async function localMigrationNames(serviceDir: string): Promise<string[]> {
  const entries = await readdir(path.join(serviceDir, "prisma", "migrations"), { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** Where the database's schema stands against the migrations of `serviceDir`. */
export async function schemaState(serviceDir: string, databaseUrl: string): Promise<SchemaState> {
  const wanted = await localMigrationNames(serviceDir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await migrationHistory(client);
    const applied = appliedMigrations(rows);
    const afterRollout = afterRolloutFolders(path.join(serviceDir, "prisma", "migrations"), wanted);
    const rollout = rolloutMigrations(wanted, afterRollout, applied);
    const missing = rollout.filter((name) => !applied.has(name));
    // A row with logs and neither finished nor rolled back is a failed migration (one in progress has no logs).
    const failed = rows
      .filter((r) => missing.includes(r.migration_name) && r.finished_at === null && r.rolled_back_at === null && r.logs)
      .map((r) => ({ name: r.migration_name, error: errorSummary(r.logs!) }));
    const local = new Set(wanted);
    const sqlFiles = await unappliedSqlFiles(client, serviceDir);
    const later = wanted.slice(rollout.length).filter((name) => !applied.has(name));
    return { missing, failed, afterRollout: later, newer: [...applied].filter((name) => !local.has(name)).sort(), sqlFiles };
  } finally {
    await client.end();
  }
}

/** Prisma's `logs` of a failed migration, without the engine's backtrace (its numbered frames). */
function errorSummary(logs: string): string {
  const lines = logs.split("\n");
  const frames = lines.findIndex((line) => /^\s*\d+: /.test(line));
  return (frames < 0 ? lines : lines.slice(0, frames))
    .map((line) => line.trim())
    .filter(Boolean)
    .join(": ")
    .slice(0, 300);
}

/** The migrations that are missing (not applied, or failed) on the database, empty when it is up to date. */
export async function pendingMigrations(serviceDir: string, databaseUrl: string): Promise<string[]> {
  return (await schemaState(serviceDir, databaseUrl)).missing;
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/**
 * Waits until the schema is at this image's version (its newest migration and every one before it
 * applied, and its SQL files), polling as the runtime role; a database not reachable yet counts as not there. Rejects
 * after `timeoutMs` with the missing migrations and what applies them.
 */
export async function waitForSchema(opts: SchemaWaitOptions): Promise<SchemaState> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  const progressEveryMs = opts.progressEveryMs ?? DEFAULT_PROGRESS_MS;
  const names = await localMigrationNames(opts.serviceDir);
  const newest = names.at(-1) ?? "(none)";
  const database = databaseName(opts.databaseUrl);
  const started = Date.now();
  let lastSaid = -Infinity;
  let situation = "";
  for (;;) {
    let state: SchemaState | undefined;
    try {
      state = await schemaState(opts.serviceDir, opts.databaseUrl);
      situation = describeState(state);
    } catch (error) {
      situation = `database not reachable: ${(error as Error).message}`;
    }
    const waited = Date.now() - started;
    if (state && state.missing.length === 0 && state.sqlFiles.length === 0) {
      const newer = state.newer.length > 0 ? `; the database also has ${state.newer.length} later migration(s) (${state.newer.join(", ")})` : "";
      const at =
        state.afterRollout.length > 0
          ? `${state.afterRollout.length} migration(s) before ${newest}: ${state.afterRollout.join(", ")} wait(s) for the end of the rollout`
          : `${newest}, this image's newest migration`;
      log(`schema of ${database} is at ${at}${newer}: starting (waited ${seconds(waited)})`);
      return state;
    }
    if (waited >= opts.timeoutMs) {
      throw new Error(
        `schema of ${database} is not at this image's version (${newest}) after ${seconds(opts.timeoutMs)}: ${situation}. ` +
          `The release's migration step applies them as the owner role (Kubernetes: Job <service>-migrate-<tag>; compose: <service>-migrate): see its logs (docs/deploy.md, Migrations)`,
      );
    }
    if (waited - lastSaid >= progressEveryMs) {
      lastSaid = waited;
      log(
        `waiting for the schema of ${database} (${redactUrl(opts.databaseUrl)}) to reach ${newest}: ${situation}; ` +
          `waited ${seconds(waited)}, giving up after ${seconds(opts.timeoutMs)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, Math.max(0, opts.timeoutMs - waited))));
  }
}

function describeState(state: SchemaState): string {
  const failed = state.failed.map((f) => `${f.name} FAILED (${f.error})`);
  const failedNames = new Set(state.failed.map((f) => f.name));
  const missing = state.missing.filter((name) => !failedNames.has(name));
  return [
    ...failed,
    ...(missing.length > 0 ? [`missing ${missing.join(", ")}`] : []),
    ...(state.sqlFiles.length > 0 ? [`SQL files not applied: ${state.sqlFiles.join(", ")}`] : []),
  ].join("; ");
}
