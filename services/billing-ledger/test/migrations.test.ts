import { randomUUID } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { deployMigrations, dropDatabase, ensureDatabase, localSqlFiles, serviceDatabaseUrl, SQL_FILES_TABLE, withDatabaseName } from "@meter/db-tools";
import { createTestDatabase, testDatabaseNamePrefix, type TestDatabase } from "@meter/testing";
import { createDatabase } from "../src/db";
import { BooksCheckService, formatBooksReport } from "../src/accounts/books-check.service";
import { BooksRepository } from "../src/accounts/books.repository";
import { SERVICE_DIR } from "./support/billing-harness";

const MIGRATIONS = path.join(SERVICE_DIR, "prisma", "migrations");

async function sqlFileNames(): Promise<string[]> {
  return (await readdir(path.join(SERVICE_DIR, "prisma", "sql"))).filter((name) => name.endsWith(".sql")).sort();
}

/** The bodies of the public functions of that name (every signature's), one after another; undefined when none. */
async function functionSource(client: Client, name: string): Promise<string | undefined> {
  const { rows } = await client.query<{ src: string }>(
    "SELECT prosrc AS src FROM pg_proc WHERE proname = $1 AND pronamespace = 'public'::regnamespace ORDER BY oid",
    [name],
  );
  return rows.length === 0 ? undefined : rows.map((r) => r.src).join("\n");
}

/**
 * Every function of the public schema is defined by one file of serviceDir's prisma/sql, with the body
 * that file has, and every file's text is recorded as the last one applied: no overload or text of an
 * older migration is left.
 */
async function expectFunctionsAreTheFiles(url: string, serviceDir: string): Promise<void> {
  const files = await localSqlFiles(serviceDir);
  const defined = files.flatMap((file) =>
    [...file.text.matchAll(/CREATE OR REPLACE FUNCTION (\w+)\([\s\S]*?\$\$([\s\S]*?)\$\$/g)].map((m) => ({ file: file.name, name: m[1]!, body: m[2]! })),
  );
  expect(defined.length).toBeGreaterThanOrEqual(files.length);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const inDatabase = await client.query<{ name: string; body: string }>(
      "SELECT proname AS name, prosrc AS body FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY proname",
    );
    // By name, then body: a name may have two signatures (apply_hold_ops: the batch's and one organization's).
    const ordered = (fns: { name: string; body: string }[]) =>
      [...fns].sort((a, b) => a.name.localeCompare(b.name) || (a.body < b.body ? -1 : a.body > b.body ? 1 : 0));
    expect(ordered(inDatabase.rows)).toEqual(ordered(defined.map(({ name, body }) => ({ name, body }))));
    const recorded = await client.query<{ name: string; sha256: string }>(
      `SELECT DISTINCT ON (name) name, sha256 FROM ${SQL_FILES_TABLE} ORDER BY name, applied_at DESC`,
    );
    expect(recorded.rows).toEqual(files.map(({ name, sha256 }) => ({ name, sha256 })));
  } finally {
    await client.end();
  }
}

/** An organization with a balance and an active key, written as the admin API would. */
async function fundedKey(client: Client, balance: number): Promise<{ id: string; key: string }> {
  const [user, id, key] = [randomUUID(), randomUUID(), randomUUID()];
  await client.query("INSERT INTO users (id, email) VALUES ($1, $2)", [user, `${user}@example.test`]);
  await client.query("INSERT INTO organizations (id, name) VALUES ($1, 'upgrade')", [id]);
  await client.query(
    "INSERT INTO api_keys (id, user_id, organization_id, prefix, key_hash, scopes, daily_budget) VALUES ($1, $2, $3, 'p', 'h', '{}', 1000000)",
    [key, user, id],
  );
  const credit = await client.query<{ id: string }>(
    "INSERT INTO ledger_entries (organization_id, kind, amount, balance_after, reserved_after, reference) VALUES ($1, 'credit', $2, $2, 0, 'c') RETURNING id",
    [id, balance],
  );
  await client.query("INSERT INTO credits (id, organization_id, reference, amount, ledger_entry_id) VALUES ($1, $2, 'c', $3, $4)", [
    randomUUID(),
    id,
    balance,
    credit.rows[0]!.id,
  ]);
  await client.query("UPDATE organizations SET balance = $2 WHERE id = $1", [id, balance]);
  return { id, key };
}

/**
 * A database and a work folder of a describe block's own, made before its tests and removed after them;
 * `client` is connected to the database.
 */
function scratchDatabase(name: string): { url: string; workDir: string; client: Client } {
  const scratch = {
    url: withDatabaseName(serviceDatabaseUrl(SERVICE_DIR), `${testDatabaseNamePrefix()}billing_${name}_${randomUUID().slice(0, 8)}`),
    workDir: "",
    client: undefined as unknown as Client,
  };
  beforeAll(async () => {
    scratch.workDir = await mkdtemp(path.join(os.tmpdir(), `billing-${name}-`));
    await ensureDatabase(scratch.url);
    scratch.client = new Client({ connectionString: scratch.url });
    await scratch.client.connect();
  });
  afterAll(async () => {
    await scratch.client?.end();
    await dropDatabase(scratch.url);
    await rm(scratch.workDir, { recursive: true, force: true });
  });
  return scratch;
}

async function migrationNames(): Promise<string[]> {
  return (await readdir(MIGRATIONS, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The newest migration of main at 58b2b91, the last one allowed to define a function (issue 32). */
const LAST_DEFINING_FUNCTIONS = "20261126165425_allowances";

it("no migration after the functions moved to prisma/sql defines a function: migrations carry schema changes only", async () => {
  const later = (await migrationNames()).filter((name) => name > LAST_DEFINING_FUNCTIONS);
  for (const name of later) {
    const sql = await readFile(path.join(MIGRATIONS, name, "migration.sql"), "utf8");
    expect({ name, definesFunction: /CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)/i.test(sql) }).toEqual({ name, definesFunction: false });
  }
});

describe("the money rules in the database are prisma/sql's", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(SERVICE_DIR);
  });
  afterAll(() => database.drop());

  it("after a deploy on a new database (npm start, the migration Job and the tests all deploy so): each function is its file's", async () => {
    await expectFunctionsAreTheFiles(database.url, SERVICE_DIR);
  });
});

describe("an upgrade from the schema of main at 58b2b91, whose migrations defined apply_hold_ops", () => {
  const scratch = scratchDatabase("upgrade");

  it("replaces the monolith by the files, settles a hold it placed, and applies an edited file exactly once", async () => {
    // The image of 58b2b91: its migrations, no prisma/sql step (the function came with the migrations).
    const previous = path.join(scratch.workDir, "previous");
    const names = (await migrationNames()).filter((name) => name <= LAST_DEFINING_FUNCTIONS);
    await cp(path.join(MIGRATIONS, "migration_lock.toml"), path.join(previous, "prisma", "migrations", "migration_lock.toml"));
    for (const name of names) await cp(path.join(MIGRATIONS, name), path.join(previous, "prisma", "migrations", name), { recursive: true });
    await deployMigrations({ serviceDir: previous, databaseUrl: scratch.url });
    const monolith = await functionSource(scratch.client, "apply_hold_ops");
    expect(monolith).toContain("INSERT INTO holds");
    const org = await fundedKey(scratch.client, 100_000);
    const hold = randomUUID();
    const place = { op: "place", hold_id: hold, key_id: org.key, amount_microrub: 5_000, operation: "text", model: "m", source: "text", owner_ref: "r" };
    expect((await scratch.client.query("SELECT outcome FROM apply_hold_ops($1::jsonb, 'UTC', 1000, 0.25)", [JSON.stringify([place])])).rows).toEqual([
      { outcome: "placed" },
    ]);

    // This image: the same migrations and more, then every file of prisma/sql.
    const current = path.join(scratch.workDir, "current");
    await cp(path.join(SERVICE_DIR, "prisma"), path.join(current, "prisma"), { recursive: true });
    const deployed = await deployMigrations({ serviceDir: current, databaseUrl: scratch.url });
    expect(deployed).toEqual({ migrations: (await migrationNames()).filter((name) => name > LAST_DEFINING_FUNCTIONS), sqlFiles: await sqlFileNames() });
    await expectFunctionsAreTheFiles(scratch.url, current);
    expect(await functionSource(scratch.client, "apply_hold_ops")).not.toContain("INSERT INTO holds");
    const settle = { op: "settle", hold_id: hold, amount_microrub: 1_200, source: "text" };
    expect((await scratch.client.query("SELECT outcome, settled FROM apply_hold_ops($1::jsonb, 'UTC', 1000, 0.25)", [JSON.stringify([settle])])).rows).toEqual([
      { outcome: "settled", settled: "1200" },
    ]);
    expect((await scratch.client.query("SELECT balance, reserved FROM organizations WHERE id = $1", [org.id])).rows).toEqual([
      { balance: "98800", reserved: "0" },
    ]);

    // An edited rule: applied by the next deploy, and by no deploy after it.
    const file = path.join(current, "prisma", "sql", "hold_place.sql");
    await writeFile(file, (await readFile(file, "utf8")).replace("BEGIN\n", "BEGIN\n  -- edited\n"));
    await expect(deployMigrations({ serviceDir: current, databaseUrl: scratch.url })).resolves.toEqual({ migrations: [], sqlFiles: ["hold_place.sql"] });
    await expect(deployMigrations({ serviceDir: current, databaseUrl: scratch.url })).resolves.toEqual({ migrations: [], sqlFiles: [] });
    expect(await functionSource(scratch.client, "hold_place")).toContain("-- edited");
    await expectFunctionsAreTheFiles(scratch.url, current);
  });
});

describe("the migration to owned holds and budgets across midnight", () => {
  const scratch = scratchDatabase("carry");

  it("carries reservations, daily spending and the books over", async () => {
    const names = await migrationNames();
    const target = names.findIndex((n) => n.endsWith("_owned_holds_and_budget_across_midnight"));
    expect(target).toBeGreaterThan(0);
    // The migrations before it, on their own: the schema as it was.
    const serviceDir = path.join(scratch.workDir, "billing-ledger");
    await cp(path.join(MIGRATIONS, "migration_lock.toml"), path.join(serviceDir, "prisma", "migrations", "migration_lock.toml"));
    for (const name of names.slice(0, target)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    await deployMigrations({ serviceDir, databaseUrl: scratch.url });

    const [user, org, key] = [randomUUID(), randomUUID(), randomUUID()];
    await scratch.client.query("INSERT INTO users (id, email) VALUES ($1, 'legacy@example.test')", [user]);
    await scratch.client.query("INSERT INTO organizations (id, name) VALUES ($1, 'legacy')", [org]);
    await scratch.client.query(
      "INSERT INTO api_keys (id, user_id, organization_id, prefix, key_hash, scopes, daily_budget) VALUES ($1, $2, $3, 'p', 'h', '{}', 100000)",
      [key, user, org],
    );
    const credit = await scratch.client.query<{ id: string }>(
      "INSERT INTO ledger_entries (organization_id, kind, amount, balance_after, reserved_after, reference) VALUES ($1, 'credit', 50000, 50000, 0, 'c') RETURNING id",
      [org],
    );
    await scratch.client.query("INSERT INTO credits (id, organization_id, reference, amount, ledger_entry_id) VALUES ($1, $2, 'c', 50000, $3)", [
      randomUUID(),
      org,
      credit.rows[0]!.id,
    ]);
    await scratch.client.query("UPDATE organizations SET balance = 50000 WHERE id = $1", [org]);
    // Legacy traffic through the legacy function: two holds still active, one settled, one released.
    const [active1, active2, settled, released] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const place = (id: string, amount: number) => ({ op: "place", hold_id: id, key_id: key, amount, operation: "text", model: "m", source: "text" });
    await scratch.client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC')", [
      JSON.stringify([place(active1, 1_000), place(active2, 2_000), place(settled, 3_000), place(released, 4_000)]),
    ]);
    await scratch.client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC')", [
      JSON.stringify([
        { op: "settle", hold_id: settled, amount: 2_500 },
        { op: "release", hold_id: released, reason: "legacy" },
      ]),
    ]);
    // One of the active holds was placed on an earlier budget day (its usage row moves with it).
    await scratch.client.query("UPDATE holds SET budget_day = budget_day - 1, created_at = created_at - interval '1 day' WHERE id = $1", [active2]);
    await scratch.client.query("UPDATE key_daily_usage SET reserved = reserved - 2000 WHERE key_id = $1", [key]);
    await scratch.client.query("INSERT INTO key_daily_usage (key_id, day, spent, reserved) SELECT $1, budget_day, 0, 2000 FROM holds WHERE id = $2", [
      key,
      active2,
    ]);

    await cp(path.join(MIGRATIONS, names[target]!), path.join(serviceDir, "prisma", "migrations", names[target]!), { recursive: true });
    expect((await deployMigrations({ serviceDir, databaseUrl: scratch.url })).migrations).toEqual([names[target]]);

    expect((await scratch.client.query("SELECT reserved FROM api_keys WHERE id = $1", [key])).rows).toEqual([{ reserved: "3000" }]);
    const usage = await scratch.client.query("SELECT to_char(day, 'YYYY-MM-DD') AS day, spent FROM key_daily_usage WHERE key_id = $1 AND spent > 0", [key]);
    const settledHold = await scratch.client.query("SELECT to_char(budget_day, 'YYYY-MM-DD') AS day FROM holds WHERE id = $1", [settled]);
    expect(usage.rows).toEqual([{ day: settledHold.rows[0]!.day, spent: "2500" }]);
    expect((await scratch.client.query("SELECT count(*)::int AS n FROM holds WHERE budget_day IS NOT NULL AND status <> 'settled'")).rows).toEqual([{ n: 0 }]);

    // The books check and the functions of today, on the same rows carried through every later migration.
    for (const name of names.slice(target + 1)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    await cp(path.join(SERVICE_DIR, "prisma", "sql"), path.join(serviceDir, "prisma", "sql"), { recursive: true });
    expect(await deployMigrations({ serviceDir, databaseUrl: scratch.url })).toEqual({ migrations: names.slice(target + 1), sqlFiles: await sqlFileNames() });

    const database = createDatabase(scratch.url, 2);
    try {
      const report = await new BooksCheckService(new BooksRepository(database.prisma)).run();
      expect(report.discrepancies).toEqual([]);
      // Legacy holds have no owner: reported, not failed.
      expect(report.active_holds_without_owner).toBe(2);
      expect(formatBooksReport(report, "carried over")).toContain("OK: the books balance");
      // Today's function resolves a legacy hold: the key's reservation falls, today's spending rises.
      await scratch.client.query("SELECT * FROM apply_hold_ops($1::jsonb, 'UTC', 1000, 0.25)", [
        JSON.stringify([{ op: "settle", hold_id: active2, amount_microrub: 1_500 }]),
      ]);
      expect((await scratch.client.query("SELECT reserved FROM api_keys WHERE id = $1", [key])).rows).toEqual([{ reserved: "1000" }]);
      expect((await new BooksCheckService(new BooksRepository(database.prisma)).run()).discrepancies).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

describe("the migrations that give every per-organization row its organization (issue 47)", () => {
  const scratch = scratchDatabase("orgs");

  it("backfill holds, daily usage and webhook deliveries from their key or endpoint, and drop the orgless tombstones", async () => {
    const names = await migrationNames();
    const target = names.findIndex((n) => n.endsWith("_holds_organization_not_null"));
    expect(target).toBeGreaterThan(0);
    const serviceDir = path.join(scratch.workDir, "billing-ledger");
    await cp(path.join(MIGRATIONS, "migration_lock.toml"), path.join(serviceDir, "prisma", "migrations", "migration_lock.toml"));
    for (const name of names.slice(0, target)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    await deployMigrations({ serviceDir, databaseUrl: scratch.url });

    const [user, org, key, endpoint, delivery] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const q = (sql: string, values: unknown[] = []) => scratch.client.query(sql, values);
    await q("INSERT INTO users (id, email) VALUES ($1, 'orgs@example.test')", [user]);
    await q("INSERT INTO organizations (id, name) VALUES ($1, 'orgs')", [org]);
    await q("INSERT INTO api_keys (id, user_id, organization_id, prefix, key_hash, scopes, daily_budget) VALUES ($1, $2, $3, 'p', 'h', '{}', 100000)", [
      key,
      user,
      org,
    ]);
    // A hold with its key but, as a row could be, no organization; and a release's tombstone of old.
    const [keyed, tombstone] = [randomUUID(), randomUUID()];
    await q("INSERT INTO holds (id, organization_id, key_id, amount, status, owner_ref) VALUES ($1, NULL, $2, 1000, 'active', 'r')", [keyed, key]);
    await q("INSERT INTO holds (id, amount, status, source, reason, resolved_at) VALUES ($1, 0, 'released', 'text', 'gave up', now())", [tombstone]);
    await q("INSERT INTO key_daily_usage (key_id, day, spent) VALUES ($1, '2026-11-01', 700)", [key]);
    await q("INSERT INTO webhook_endpoints (id, organization_id, url, events, secret) VALUES ($1, $2, 'https://example.test/h', '{test}', 's')", [
      endpoint,
      org,
    ]);
    await q("INSERT INTO webhook_events (id, organization_id, type, body) VALUES ('msg_1', $1, 'test', '{}')", [org]);
    await q("INSERT INTO webhook_deliveries (id, endpoint_id, event_id) VALUES ($1, $2, 'msg_1')", [delivery, endpoint]);
    await q("INSERT INTO webhook_delivery_attempts (delivery_id, attempted_at, duration_ms) VALUES ($1, now(), 5)", [delivery]);

    for (const name of names.slice(target)) await cp(path.join(MIGRATIONS, name), path.join(serviceDir, "prisma", "migrations", name), { recursive: true });
    expect((await deployMigrations({ serviceDir, databaseUrl: scratch.url })).migrations).toEqual(names.slice(target));

    expect((await q("SELECT id, organization_id FROM holds ORDER BY id")).rows).toEqual([{ id: keyed, organization_id: org }]);
    expect((await q("SELECT organization_id, key_id, spent FROM key_daily_usage")).rows).toEqual([{ organization_id: org, key_id: key, spent: "700" }]);
    expect((await q("SELECT organization_id FROM webhook_deliveries")).rows).toEqual([{ organization_id: org }]);
    expect((await q("SELECT organization_id FROM webhook_delivery_attempts")).rows).toEqual([{ organization_id: org }]);
    await expect(q("INSERT INTO holds (id, amount, status, resolved_at) VALUES ($1, 0, 'released', now())", [randomUUID()])).rejects.toThrow(/not-null/);
  });
});
