import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { databaseName, withDatabaseName } from "../src/postgres";
import { deployWithLock, runMigrationCommand } from "../src/service-migrations";
import { localMigrationNames, waitForSchema } from "../src/schema-wait";
import { FIXTURE_DIR, query, scratchDatabaseUrl } from "./support/scratch-database";

/**
 * The wait every pod of a service runs before it starts (`node dist/migrate.js wait`): as the runtime
 * role of the deployments' own SQL (k8s/dev-dependencies/postgres/service-database.sql), against the
 * migrations the owner role applies, on this machine's PostgreSQL.
 */
const SERVICE_DATABASE_SQL = path.resolve(__dirname, "../../../k8s/dev-dependencies/postgres/service-database.sql");
const url = scratchDatabaseUrl("wait");
const db = databaseName(url);
const password = randomBytes(12).toString("hex");
const roleUrl = (role: "owner" | "app") => {
  const u = new URL(url);
  u.username = `${db}_${role}`;
  u.password = password;
  return u.toString();
};
const admin = withDatabaseName(url, "postgres");
let laterImage: string;
const LATER = "20991231000000_later";

beforeAll(async () => {
  execFileSync(
    "psql",
    [
      "-q",
      admin,
      ...["-v", `db=${db}`, "-v", `owner=${db}_owner`, "-v", `app=${db}_app`, "-v", `owner_password=${password}`, "-v", `app_password=${password}`],
    ].concat(["-f", SERVICE_DATABASE_SQL]),
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  // The next release's image: the same migrations and one more.
  laterImage = await mkdtemp(path.join(os.tmpdir(), "meter-schema-wait-"));
  await cp(FIXTURE_DIR, laterImage, { recursive: true });
  await mkdir(path.join(laterImage, "prisma", "migrations", LATER));
  await writeFile(path.join(laterImage, "prisma", "migrations", LATER, "migration.sql"), 'ALTER TABLE "notes" ADD COLUMN "summary" TEXT;\n');
});

afterAll(async () => {
  await query(admin, `DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  await query(admin, `DROP ROLE IF EXISTS "${db}_owner"`);
  await query(admin, `DROP ROLE IF EXISTS "${db}_app"`);
  await rm(laterImage, { recursive: true, force: true });
});

describe("waiting for the schema as the runtime role", () => {
  it("waits while the image's migrations are missing, saying what it waits for, and starts once the owner has applied them", async () => {
    const [newest] = (await localMigrationNames(FIXTURE_DIR)).slice(-1);
    const lines: string[] = [];
    let done = false;
    const waiting = waitForSchema({
      serviceDir: FIXTURE_DIR,
      databaseUrl: roleUrl("app"),
      timeoutMs: 60_000,
      pollMs: 50,
      progressEveryMs: 0,
      log: (l) => lines.push(l),
    }).finally(() => (done = true));
    while (lines.length < 3) await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    expect(lines[0]).toMatch(
      new RegExp(`^waiting for the schema of ${db} \\(.*${db}_app:\\*\\*\\*@.*\\) to reach ${newest}: missing ${newest}; waited .*, giving up after 60 s$`),
    );

    await deployWithLock(FIXTURE_DIR, roleUrl("owner"));
    await expect(waiting).resolves.toMatchObject({ missing: [], newer: [] });
    expect(lines.at(-1)).toMatch(new RegExp(`^schema of ${db} is at ${newest}, this image's newest migration: starting`));
    // The runtime role could not have applied them itself.
    await expect(query(roleUrl("app"), "CREATE TABLE t (id int)")).rejects.toThrow(/permission denied/);
  });

  it("gives up after its bound with an error naming the missing migration and what applies it (exit 1 from dist/migrate.js)", async () => {
    const lines: string[] = [];
    const wait = waitForSchema({ serviceDir: laterImage, databaseUrl: roleUrl("app"), timeoutMs: 300, pollMs: 50, log: (l) => lines.push(l) });
    await expect(wait).rejects.toThrow(
      new RegExp(
        `^schema of ${db} is not at this image's version \\(${LATER}\\) after 0\\.3 s: missing ${LATER}\\. The release's migration step applies them .*Job <service>-migrate-<tag>`,
      ),
    );
    expect(lines).toHaveLength(1);

    const env = { TEXT_DATABASE_URL: roleUrl("app"), MIGRATION_WAIT_TIMEOUT_MS: "200" };
    await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: laterImage, argv: ["wait"], env, log: () => undefined })).rejects.toThrow(
      /not at this image's version .* after 0\.2 s/,
    );
  });

  it("starts at once on a later release's schema (a rollback), and names it; the older release's Job finds nothing to do", async () => {
    await deployWithLock(laterImage, roleUrl("owner"));
    await expect(deployWithLock(FIXTURE_DIR, roleUrl("owner"))).resolves.toEqual({ migrations: [], sqlFiles: [] });
    const lines: string[] = [];
    await expect(waitForSchema({ serviceDir: FIXTURE_DIR, databaseUrl: roleUrl("app"), timeoutMs: 1000, log: (l) => lines.push(l) })).resolves.toMatchObject({
      missing: [],
      newer: [LATER],
    });
    expect(lines).toEqual([expect.stringMatching(new RegExp(`also has 1 later migration\\(s\\) \\(${LATER}\\): starting`))]);
  });

  it("names a failed migration while it waits; once marked rolled back (docs/deploy.md), a fixed release's Job applies", async () => {
    const broken = await mkdtemp(path.join(os.tmpdir(), "meter-schema-wait-"));
    try {
      await cp(laterImage, broken, { recursive: true });
      const name = "20991231000001_more";
      await mkdir(path.join(broken, "prisma", "migrations", name));
      await writeFile(path.join(broken, "prisma", "migrations", name, "migration.sql"), 'ALTER TABLE "no_such_table" ADD COLUMN "x" INT;\n');
      await expect(deployWithLock(broken, roleUrl("owner"))).rejects.toThrow(/no_such_table/);
      const wait = waitForSchema({ serviceDir: broken, databaseUrl: roleUrl("app"), timeoutMs: 200, pollMs: 50, log: () => undefined });
      await expect(wait).rejects.toThrow(new RegExp(`after 0\\.2 s: ${name} FAILED \\(external connector error: No such table: no_such_table\\)`));

      // What `prisma migrate resolve --rolled-back` records, as the owner; then the fixed migration applies.
      await query(roleUrl("owner"), "UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = $1 AND finished_at IS NULL", [name]);
      await writeFile(path.join(broken, "prisma", "migrations", name, "migration.sql"), 'ALTER TABLE "notes" ADD COLUMN "x" INT;\n');
      await expect(deployWithLock(broken, roleUrl("owner"))).resolves.toEqual({ migrations: [name], sqlFiles: [] });
      await expect(waitForSchema({ serviceDir: broken, databaseUrl: roleUrl("app"), timeoutMs: 1000, log: () => undefined })).resolves.toMatchObject({
        missing: [],
      });
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });

  it("migrates (the Job) once the server answers, and gives up after its bound when it never does", async () => {
    const lines: string[] = [];
    const env = { TEXT_MIGRATION_DATABASE_URL: roleUrl("owner"), MIGRATION_CONNECT_TIMEOUT_MS: "1000" };
    await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: FIXTURE_DIR, argv: ["deploy"], env, log: (l) => lines.push(l) })).resolves.toBe(0);
    expect(lines).toEqual([expect.stringMatching(/^no pending migrations on /)]);

    const closed = new URL(roleUrl("owner"));
    closed.port = "1";
    const lost = { TEXT_MIGRATION_DATABASE_URL: closed.toString(), MIGRATION_CONNECT_TIMEOUT_MS: "300" };
    await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: FIXTURE_DIR, argv: ["deploy"], env: lost, log: () => undefined })).rejects.toThrow(
      /:1\/\S+ not reachable after 0\.3 s: .*ECONNREFUSED/,
    );
  });

  it("waits for the image's SQL files too, and starts on a later release's text of them (a rollback)", async () => {
    const noteCount = (expression: string) => `CREATE OR REPLACE FUNCTION note_count() RETURNS bigint LANGUAGE sql AS $$ SELECT ${expression} FROM notes $$;\n`;
    const image = await mkdtemp(path.join(os.tmpdir(), "meter-schema-wait-"));
    const next = await mkdtemp(path.join(os.tmpdir(), "meter-schema-wait-"));
    try {
      await cp(laterImage, image, { recursive: true });
      await mkdir(path.join(image, "prisma", "sql"));
      await writeFile(path.join(image, "prisma", "sql", "note_count.sql"), noteCount("count(*)"));
      const waiting = waitForSchema({ serviceDir: image, databaseUrl: roleUrl("app"), timeoutMs: 200, pollMs: 50, log: () => undefined });
      await expect(waiting).rejects.toThrow(/after 0\.2 s: SQL files not applied: note_count\.sql\./);

      await expect(deployWithLock(image, roleUrl("owner"))).resolves.toEqual({ migrations: [], sqlFiles: ["note_count.sql"] });
      await expect(waitForSchema({ serviceDir: image, databaseUrl: roleUrl("app"), timeoutMs: 1000, log: () => undefined })).resolves.toMatchObject({
        missing: [],
        sqlFiles: [],
      });
      expect(await query(roleUrl("app"), "SELECT note_count()::int AS n")).toEqual([{ n: expect.any(Number) }]);

      // The next release's text replaces it; a pod of this release (a rollback, a restart while the next one rolls) still starts.
      await cp(image, next, { recursive: true });
      await writeFile(path.join(next, "prisma", "sql", "note_count.sql"), noteCount("count(*) + 0"));
      await expect(deployWithLock(next, roleUrl("owner"))).resolves.toEqual({ migrations: [], sqlFiles: ["note_count.sql"] });
      await expect(waitForSchema({ serviceDir: image, databaseUrl: roleUrl("app"), timeoutMs: 1000, log: () => undefined })).resolves.toMatchObject({
        sqlFiles: [],
      });
      await expect(deployWithLock(next, roleUrl("owner"))).resolves.toEqual({ migrations: [], sqlFiles: [] });
    } finally {
      await rm(image, { recursive: true, force: true });
      await rm(next, { recursive: true, force: true });
    }
  });

  it("keeps waiting while the database cannot be reached, and says so", async () => {
    const lines: string[] = [];
    const missingDb = withDatabaseName(roleUrl("app"), `${db}_absent`);
    await expect(waitForSchema({ serviceDir: FIXTURE_DIR, databaseUrl: missingDb, timeoutMs: 200, pollMs: 50, log: (l) => lines.push(l) })).rejects.toThrow(
      /after 0\.2 s: database not reachable: .*does not exist/,
    );
    expect(lines[0]).toMatch(/database not reachable/);
  });
});
