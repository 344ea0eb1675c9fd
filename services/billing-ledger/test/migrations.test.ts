import { randomUUID } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { deployMigrations, dropDatabase, ensureDatabase, serviceDatabaseUrl, withDatabaseName } from "@meter/db-tools";
import { testDatabaseNamePrefix } from "@meter/testing";
import { createDatabase } from "../src/db";
import { BooksCheckService, formatBooksReport } from "../src/accounts/books-check.service";
import { BooksRepository } from "../src/accounts/books.repository";
import { SERVICE_DIR } from "./support/billing-harness";

const MIGRATIONS = path.join(SERVICE_DIR, "prisma", "migrations");

async function migrationNames(): Promise<string[]> {
  return (await readdir(MIGRATIONS, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

it("the newest migration that defines apply_hold_ops contains exactly prisma/sql/apply_hold_ops.sql", async () => {
  const source = await readFile(path.join(SERVICE_DIR, "prisma", "sql", "apply_hold_ops.sql"), "utf8");
  const defining: { name: string; sql: string }[] = [];
  for (const name of await migrationNames()) {
    const sql = await readFile(path.join(MIGRATIONS, name, "migration.sql"), "utf8");
    if (/CREATE (OR REPLACE )?FUNCTION apply_hold_ops\(/.test(sql)) defining.push({ name, sql });
  }
  const newest = defining.at(-1);
  expect(newest).toBeDefined();
  // Edit the source file, then add a migration with its new text: they cannot drift apart.
  expect(newest!.sql.includes(source)).toBe(true);
});

describe("the migration to owned holds and budgets across midnight", () => {
  const url = withDatabaseName(serviceDatabaseUrl(SERVICE_DIR), `${testDatabaseNamePrefix()}billing_carry_${randomUUID().slice(0, 8)}`);
  let workDir: string;
  let client: Client;
  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "billing-migrations-"));
    await ensureDatabase(url);
    client = new Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await dropDatabase(url);
    await rm(workDir, { recursive: true, force: true });
  });

  it("carries reservations, daily spending and the books over", async () => {
    const names = await migrationNames();
    const target = names.findIndex((n) => n.endsWith("_owned_holds_and_budget_across_midnight"));
    expect(target).toBeGreaterThan(0);
    // The migrations before it, on their own: the schema as it was.
    const serviceDir = path.join(workDir, "billing-ledger");
    await cp(path.join(MIGRATIONS, "migration_lock.toml"), path.join(serviceDir, "prisma", "migrations", "migration_lock.toml"));
    for (const name of names.slice(0, target)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    await deployMigrations({ serviceDir, databaseUrl: url });

    const [user, org, key] = [randomUUID(), randomUUID(), randomUUID()];
    await client.query("INSERT INTO users (id, email) VALUES ($1, 'legacy@example.test')", [user]);
    await client.query("INSERT INTO organizations (id, name) VALUES ($1, 'legacy')", [org]);
    await client.query(
      "INSERT INTO api_keys (id, user_id, organization_id, prefix, key_hash, scopes, daily_budget) VALUES ($1, $2, $3, 'p', 'h', '{}', 100000)",
      [key, user, org],
    );
    const credit = await client.query<{ id: string }>(
      "INSERT INTO ledger_entries (organization_id, kind, amount, balance_after, reserved_after, reference) VALUES ($1, 'credit', 50000, 50000, 0, 'c') RETURNING id",
      [org],
    );
    await client.query("INSERT INTO credits (id, organization_id, reference, amount, ledger_entry_id) VALUES ($1, $2, 'c', 50000, $3)", [
      randomUUID(),
      org,
      credit.rows[0]!.id,
    ]);
    await client.query("UPDATE organizations SET balance = 50000 WHERE id = $1", [org]);
    // Legacy traffic through the legacy function: two holds still active, one settled, one released.
    const [active1, active2, settled, released] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const place = (id: string, amount: number) => ({ op: "place", hold_id: id, key_id: key, amount, operation: "text", model: "m", source: "text" });
    await client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC')", [
      JSON.stringify([place(active1, 1_000), place(active2, 2_000), place(settled, 3_000), place(released, 4_000)]),
    ]);
    await client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC')", [
      JSON.stringify([
        { op: "settle", hold_id: settled, amount: 2_500 },
        { op: "release", hold_id: released, reason: "legacy" },
      ]),
    ]);
    // One of the active holds was placed on an earlier budget day (its usage row moves with it).
    await client.query("UPDATE holds SET budget_day = budget_day - 1, created_at = created_at - interval '1 day' WHERE id = $1", [active2]);
    await client.query("UPDATE key_daily_usage SET reserved = reserved - 2000 WHERE key_id = $1", [key]);
    await client.query("INSERT INTO key_daily_usage (key_id, day, spent, reserved) SELECT $1, budget_day, 0, 2000 FROM holds WHERE id = $2", [key, active2]);

    await cp(path.join(MIGRATIONS, names[target]!), path.join(serviceDir, "prisma", "migrations", names[target]!), { recursive: true });
    expect(await deployMigrations({ serviceDir, databaseUrl: url })).toEqual([names[target]]);

    expect((await client.query("SELECT reserved FROM api_keys WHERE id = $1", [key])).rows).toEqual([{ reserved: "3000" }]);
    const usage = await client.query("SELECT to_char(day, 'YYYY-MM-DD') AS day, spent FROM key_daily_usage WHERE key_id = $1 AND spent > 0", [key]);
    const settledHold = await client.query("SELECT to_char(budget_day, 'YYYY-MM-DD') AS day FROM holds WHERE id = $1", [settled]);
    expect(usage.rows).toEqual([{ day: settledHold.rows[0]!.day, spent: "2500" }]);
    expect((await client.query("SELECT count(*)::int AS n FROM holds WHERE budget_day IS NOT NULL AND status <> 'settled'")).rows).toEqual([{ n: 0 }]);

    // The books check and the function of today, on the same rows carried through every later migration.
    for (const name of names.slice(target + 1)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    expect(await deployMigrations({ serviceDir, databaseUrl: url })).toEqual(names.slice(target + 1));

    const database = createDatabase(url, 2);
    try {
      const report = await new BooksCheckService(new BooksRepository(database.prisma)).run();
      expect(report.discrepancies).toEqual([]);
      // Legacy holds have no owner: reported, not failed.
      expect(report.active_holds_without_owner).toBe(2);
      expect(formatBooksReport(report, "carried over")).toContain("OK: the books balance");
      // Today's function resolves a legacy hold: the key's reservation falls, today's spending rises.
      await client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC', 1000, 0.25)", [
        JSON.stringify([{ op: "settle", hold_id: active2, amount_microrub: 1_500 }]),
      ]);
      expect((await client.query("SELECT reserved FROM api_keys WHERE id = $1", [key])).rows).toEqual([{ reserved: "1000" }]);
      expect((await new BooksCheckService(new BooksRepository(database.prisma)).run()).discrepancies).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
