import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { deployMigrations, dropDatabase, ensureDatabase } from "../src";
import { FIXTURE_DIR, query, scratchDatabaseUrl } from "./support/scratch-database";

/** A service's `prisma/sql` functions, applied after its migrations whenever a file's text changes. */
const url = scratchDatabaseUrl("sqlfiles");
let image: string;
const sqlFile = (name: string, text: string) => writeFile(path.join(image, "prisma", "sql", name), text);
const fn = (name: string, body: string) =>
  `-- ${name}: a test function.\nCREATE OR REPLACE FUNCTION ${name}() RETURNS text LANGUAGE plpgsql AS $$ BEGIN ${body} END $$;\n`;
const call = async (name: string) => (await query<{ v: string }>(url, `SELECT ${name}() AS v`))[0]?.v;

beforeAll(async () => {
  await ensureDatabase(url);
  image = await mkdtemp(path.join(os.tmpdir(), "meter-sql-files-"));
  await cp(FIXTURE_DIR, image, { recursive: true });
  await mkdir(path.join(image, "prisma", "sql"));
});

afterAll(async () => {
  await dropDatabase(url);
  await rm(image, { recursive: true, force: true });
});

it("applies every file after the migrations, then only a file whose text changed, once", async () => {
  // b calls a: PL/pgSQL resolves it when it runs, so the name order is no constraint.
  await sqlFile("b_outer.sql", fn("b_outer", "RETURN 'outer of ' || a_inner();"));
  await sqlFile("a_inner.sql", fn("a_inner", "RETURN 'one';"));
  const migrations = (await deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url })).migrations;
  expect(migrations).toHaveLength(1);
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).resolves.toEqual({ migrations: [], sqlFiles: ["a_inner.sql", "b_outer.sql"] });
  expect(await call("b_outer")).toBe("outer of one");

  await sqlFile("a_inner.sql", fn("a_inner", "RETURN 'two';"));
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).resolves.toEqual({ migrations: [], sqlFiles: ["a_inner.sql"] });
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).resolves.toEqual({ migrations: [], sqlFiles: [] });
  expect(await call("b_outer")).toBe("outer of two");
});

it("applies no file of a deploy when one fails, and names it", async () => {
  await sqlFile("a_inner.sql", fn("a_inner", "RETURN 'three';"));
  await sqlFile("c_broken.sql", "CREATE OR REPLACE FUNCTION c_broken( RETURNS text;\n");
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).rejects.toThrow(/^prisma\/sql\/c_broken\.sql: syntax error/);
  expect(await call("a_inner")).toBe("two");

  await rm(path.join(image, "prisma", "sql", "c_broken.sql"));
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).resolves.toEqual({ migrations: [], sqlFiles: ["a_inner.sql"] });
  expect(await call("a_inner")).toBe("three");
});

it("applies every file again after a migration, which may have dropped a function", async () => {
  const name = "20991231000000_drops_a_function";
  await mkdir(path.join(image, "prisma", "migrations", name));
  await writeFile(path.join(image, "prisma", "migrations", name, "migration.sql"), "DROP FUNCTION a_inner();\n");
  await expect(deployMigrations({ serviceDir: image, databaseUrl: url })).resolves.toEqual({ migrations: [name], sqlFiles: ["a_inner.sql", "b_outer.sql"] });
  expect(await call("b_outer")).toBe("outer of three");
});
