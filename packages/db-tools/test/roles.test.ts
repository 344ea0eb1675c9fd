import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { deployMigrations } from "../src/migrations";
import { databaseName, ensureDatabase, withDatabaseName } from "../src/postgres";
import { ensureServiceRoles } from "../src/roles";
import { deployWithLock } from "../src/service-migrations";
import { waitForSchema } from "../src/schema-wait";
import { FIXTURE_DIR, query, scratchDatabaseUrl } from "./support/scratch-database";

/**
 * `npm start`'s databases get the deployments' two roles: a database made before them (migrated as the
 * superuser, as `npm start` used to) converges to the owner owning everything and the runtime role only
 * reading and writing rows, and what the owner migrates later is the runtime role's to use.
 */
const url = scratchDatabaseUrl("roles");
const db = databaseName(url);
const admin = withDatabaseName(url, "postgres");
let laterImage: string;

beforeAll(async () => {
  laterImage = await mkdtemp(path.join(os.tmpdir(), "meter-roles-"));
  await cp(FIXTURE_DIR, laterImage, { recursive: true });
  await mkdir(path.join(laterImage, "prisma", "migrations", "20991231000000_later"));
  await writeFile(
    path.join(laterImage, "prisma", "migrations", "20991231000000_later", "migration.sql"),
    'CREATE TABLE "tags" ("id" BIGSERIAL PRIMARY KEY, "name" TEXT NOT NULL);\n',
  );
});

afterAll(async () => {
  await query(admin, `DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  await query(admin, `DROP ROLE IF EXISTS "${db}_owner"`);
  await query(admin, `DROP ROLE IF EXISTS "${db}_app"`);
  await rm(laterImage, { recursive: true, force: true });
});

it("turns a database migrated as the superuser into one the owner migrates and the runtime role only uses, and again without harm", async () => {
  await ensureDatabase(url);
  await deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url });
  await query(url, `INSERT INTO authors (id, email) VALUES (gen_random_uuid(), 'old@example.com')`);

  const roles = await ensureServiceRoles(url);
  expect(roles).toEqual({ ownerUrl: expect.stringContaining(`${db}_owner@`), appUrl: expect.stringContaining(`${db}_app@`) });
  expect(await ensureServiceRoles(url)).toEqual(roles);

  const owners = await query<{ owner: string }>(
    url,
    `SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`,
  );
  expect(owners).toEqual([{ owner: `${db}_owner` }]);

  // The runtime role: rows of the old tables (and their sequences), its schema wait, and no DDL.
  await query(roles.appUrl, `INSERT INTO notes (author_id, title) SELECT id, 'n' FROM authors`);
  expect(await query(roles.appUrl, "SELECT title FROM notes")).toEqual([{ title: "n" }]);
  await expect(waitForSchema({ serviceDir: FIXTURE_DIR, databaseUrl: roles.appUrl, timeoutMs: 1000, log: () => undefined })).resolves.toMatchObject({
    missing: [],
  });
  await expect(query(roles.appUrl, "CREATE TABLE t (id int)")).rejects.toThrow(/permission denied/);
  await expect(query(roles.appUrl, "ALTER TABLE notes ADD COLUMN x int")).rejects.toThrow(/must be owner/);

  // The owner migrates the next release; its new table is the runtime role's to use at once.
  await expect(deployWithLock(laterImage, roles.ownerUrl)).resolves.toEqual({ migrations: ["20991231000000_later"], sqlFiles: [] });
  await query(roles.appUrl, `INSERT INTO tags (name) VALUES ('a')`);
  expect(await query(roles.appUrl, "SELECT name FROM tags")).toEqual([{ name: "a" }]);
});
