import { randomBytes } from "node:crypto";
import path from "node:path";
import { deployMigrations, dropDatabase, ensureDatabase, serviceDatabaseUrl, withDatabaseName, type Stage } from "@meter/db-tools";
import pg from "pg";
import { recordsMoneyPath, recordWrites } from "./money-path";

/** PostgreSQL truncates longer identifiers, which would make two test databases collide. */
const MAX_DATABASE_NAME = 63;
const SUFFIX_LENGTH = 8;

/**
 * Every test database starts with this, so that a CI run (METER_TEST_RUN) can find and drop what
 * it left behind, and local runs (`t_local_`) never touch a CI run's databases.
 */
export function testDatabaseNamePrefix(): string {
  return `t_${sanitize(process.env.METER_TEST_RUN ?? "local")}_`;
}

function sanitize(part: string): string {
  return part.toLowerCase().replace(/[^a-z0-9]+/g, "_");
}

/** `t_<run>_<service>_<random>`, the service part shortened so the whole fits PostgreSQL's limit. */
function testDatabaseName(serviceDir: string): string {
  const prefix = testDatabaseNamePrefix();
  const suffix = randomBytes(SUFFIX_LENGTH / 2).toString("hex");
  const room = MAX_DATABASE_NAME - prefix.length - suffix.length - 1;
  if (room < 1) throw new Error(`METER_TEST_RUN is too long for a database name: ${process.env.METER_TEST_RUN}`);
  const service = sanitize(path.basename(path.resolve(serviceDir))).slice(0, Math.min(room, 16));
  return `${prefix}${service}_${suffix}`;
}

export type TestDatabase = { url: string; drop(): Promise<void> };

/** How a test database gets its schema: this checkout's migrations, or another release's own tool. */
export type Migrate = (serviceDir: string, databaseUrl: string) => Promise<void>;

/**
 * Applies this checkout's migrations and SQL functions of the service to the database: all of them, or
 * (`rollout`) what the release's migration Job applies while the previous release's pods run.
 */
export async function thisCheckoutsMigrations(serviceDir: string, databaseUrl: string, stage: Stage = "all"): Promise<void> {
  await deployMigrations({ serviceDir, databaseUrl, stage });
}

/**
 * A new database with the service's migrations and prisma/sql functions applied (by `migrate`: those
 * of this checkout unless told), on the server of the service's database URL (its
 * <SERVICE>_DATABASE_URL, else local PostgreSQL). Call drop() in afterAll.
 */
export async function createTestDatabase(serviceDir: string, migrate: Migrate = thisCheckoutsMigrations): Promise<TestDatabase> {
  const url = withDatabaseName(serviceDatabaseUrl(serviceDir), testDatabaseName(serviceDir));
  await ensureDatabase(url);
  try {
    await migrate(serviceDir, url);
    // A money suite's billing database records who writes which organization (money-path.ts).
    if (path.basename(path.resolve(serviceDir)) === "billing-ledger" && recordsMoneyPath()) await recordWrites(url);
  } catch (error) {
    await dropDatabase(url);
    throw error;
  }
  // `npm test` keeps every test database until the suite is over, proves the books of each billing
  // one, then drops them all by prefix.
  const keep = process.env.METER_KEEP_TEST_DATABASES === "1";
  return { url, drop: () => (keep ? Promise.resolve() : dropDatabase(url)) };
}

/** One query on its own connection (a test reading a service's database as an operator would). */
export async function queryRows<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
