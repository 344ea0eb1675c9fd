import { createHash } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { checkDrift, createMigration, deployMigrations, dropDatabase, ensureDatabase } from "../src";
import { shadowDatabasePrefix } from "../src/shadow-database";
import { databasesNamed, FIXTURE_DIR, query, scratchDatabaseUrl } from "./support/scratch-database";

type MigrationRow = {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
  applied_steps_count: number;
};

const MIGRATIONS_DIR = path.join(FIXTURE_DIR, "prisma", "migrations");

async function fixtureMigrations(): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

describe("deployMigrations", () => {
  const url = scratchDatabaseUrl("deploy");

  beforeAll(() => ensureDatabase(url));
  afterAll(() => dropDatabase(url));

  it("applies every migration to an empty database and records it as prisma migrate deploy does", async () => {
    const names = await fixtureMigrations();
    expect(names).toHaveLength(1);

    await expect(deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url })).resolves.toEqual({ migrations: names, sqlFiles: [] });

    const rows = await query<MigrationRow>(
      url,
      "SELECT migration_name, checksum, finished_at, rolled_back_at, logs, applied_steps_count FROM _prisma_migrations",
    );
    const sql = await readFile(path.join(MIGRATIONS_DIR, names[0]!, "migration.sql"));
    expect(rows).toEqual([
      {
        migration_name: names[0],
        // Prisma's checksum: SHA-256 of the migration.sql bytes, lower-case hex.
        checksum: createHash("sha256").update(sql).digest("hex"),
        finished_at: expect.any(Date),
        rolled_back_at: null,
        logs: null,
        applied_steps_count: 1,
      },
    ]);
    const tables = await query<{ table_name: string }>(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    expect(tables.map((table) => table.table_name)).toEqual(["_prisma_migrations", "authors", "notes"]);
  });

  it("is idempotent: a second run applies nothing and records nothing", async () => {
    await expect(deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url })).resolves.toEqual({ migrations: [], sqlFiles: [] });
    const [{ count }] = (await query<{ count: number }>(url, "SELECT count(*)::int AS count FROM _prisma_migrations")) as [{ count: number }];
    expect(count).toBe(1);
  });
});

describe("checkDrift and createMigration", () => {
  let workDir: string;
  let serviceDir: string;

  beforeAll(async () => {
    // A copy, so that changing the schema and writing migrations never touches the fixture.
    workDir = await mkdtemp(path.join(os.tmpdir(), "db-tools-test-"));
    serviceDir = path.join(workDir, "sample");
    await cp(path.join(FIXTURE_DIR, "prisma"), path.join(serviceDir, "prisma"), { recursive: true });
  });
  afterAll(() => rm(workDir, { recursive: true, force: true }));

  it("finds no drift between the fixture's migrations and its schema", async () => {
    await expect(checkDrift({ serviceDir: FIXTURE_DIR })).resolves.toBe("");
  });

  it("reports the SQL a schema change needs, then writes it as a migration that removes the drift", async () => {
    const schemaPath = path.join(serviceDir, "prisma", "schema.prisma");
    const schema = await readFile(schemaPath, "utf8");
    await writeFile(schemaPath, schema.replace("  title    String\n", "  title    String\n  body     String?\n"));

    const drift = await checkDrift({ serviceDir });
    expect(drift).toContain('ALTER TABLE "notes" ADD COLUMN     "body" TEXT;');

    const created = await createMigration({ serviceDir, name: "Add note body", now: new Date("2030-01-02T03:04:05Z") });
    expect(created).toEqual({
      name: "20300102030405_add_note_body",
      directory: path.join(serviceDir, "prisma", "migrations", "20300102030405_add_note_body"),
      sql: drift,
    });
    await expect(readFile(path.join(created!.directory, "migration.sql"), "utf8")).resolves.toBe(drift);

    await expect(checkDrift({ serviceDir })).resolves.toBe("");
    await expect(createMigration({ serviceDir, name: "nothing" })).resolves.toBeNull();
  });

  it("drops every shadow database it made", async () => {
    await expect(databasesNamed(shadowDatabasePrefix())).resolves.toEqual([]);
  });
});
