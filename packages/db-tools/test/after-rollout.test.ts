import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AFTER_ROLLOUT_FILE, rolloutMigrations } from "../src/after-rollout";
import { deployMigrations } from "../src/migrations";
import { ensureDatabase, withDatabaseName } from "../src/postgres";
import { waitForSchema } from "../src/schema-wait";
import { runMigrationCommand } from "../src/service-migrations";
import { FIXTURE_DIR, query, scratchDatabaseUrl } from "./support/scratch-database";

/**
 * A release whose last migration contracts the schema (after-rollout.ts): its migration Job stops
 * before it while the previous release's pods still run, its own pods start without it, and `finish`
 * applies it once they have replaced the previous ones. A first install has no earlier pods: all at once.
 */
const EXPAND = "20991231000000_summary";
const CONTRACT = "20991231000001_title_required";
let image: string;
const urls: string[] = [];

beforeAll(async () => {
  image = await mkdtemp(path.join(os.tmpdir(), "meter-after-rollout-"));
  await cp(FIXTURE_DIR, image, { recursive: true });
  const migration = async (name: string, sql: string) => {
    await mkdir(path.join(image, "prisma", "migrations", name));
    await writeFile(path.join(image, "prisma", "migrations", name, "migration.sql"), sql);
  };
  await migration(EXPAND, 'ALTER TABLE "notes" ADD COLUMN "summary" TEXT;\n');
  await migration(CONTRACT, 'ALTER TABLE "notes" DROP COLUMN "title";\n');
  await writeFile(path.join(image, "prisma", "migrations", CONTRACT, AFTER_ROLLOUT_FILE), "The previous release writes notes.title.\n");
});

afterAll(async () => {
  for (const url of urls) await query(withDatabaseName(url, "postgres"), `DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}" WITH (FORCE)`);
  await rm(image, { recursive: true, force: true });
});

async function database(label: string): Promise<string> {
  const url = scratchDatabaseUrl(label);
  urls.push(url);
  await ensureDatabase(url);
  return url;
}

const columns = async (url: string) =>
  (await query<{ column_name: string }>(url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'notes' ORDER BY column_name")).map(
    (r) => r.column_name,
  );

it("stops the upgrade's Job before an after-rollout migration, starts the pods without it, and applies it on finish", async () => {
  const url = await database("upgrade");
  await deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url });
  const env = { TEXT_MIGRATION_DATABASE_URL: url, TEXT_DATABASE_URL: url };
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);

  await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: image, argv: ["deploy"], env, log })).resolves.toBe(0);
  expect(lines).toEqual([expect.stringMatching(new RegExp(`^applied ${EXPAND} on `))]);
  expect(await columns(url)).toEqual(expect.arrayContaining(["summary", "title"]));
  // Run again (a Job retried): still not the contract.
  await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: image, argv: ["deploy"], env, log })).resolves.toBe(0);
  expect(lines.at(-1)).toMatch(/^no pending migrations on /);

  await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: image, argv: ["wait"], env, log })).resolves.toBe(0);
  expect(lines.at(-1)).toMatch(new RegExp(`is at 1 migration\\(s\\) before ${CONTRACT}: ${CONTRACT} wait\\(s\\) for the end of the rollout: starting`));

  await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: image, argv: ["finish"], env, log })).resolves.toBe(0);
  expect(lines.at(-1)).toMatch(new RegExp(`^applied ${CONTRACT} on `));
  expect(await columns(url)).not.toContain("title");
  await expect(waitForSchema({ serviceDir: image, databaseUrl: url, timeoutMs: 1000, log })).resolves.toMatchObject({ missing: [], afterRollout: [] });
  expect(lines.at(-1)).toMatch(new RegExp(`is at ${CONTRACT}, this image's newest migration: starting`));
});

it("applies every migration, after-rollout ones too, on a new database (a first install)", async () => {
  const url = await database("install");
  const lines: string[] = [];
  const env = { TEXT_MIGRATION_DATABASE_URL: url };
  await expect(runMigrationCommand({ prefix: "TEXT", serviceDir: image, argv: ["deploy"], env, log: (l) => lines.push(l) })).resolves.toBe(0);
  expect(lines).toEqual([expect.stringMatching(new RegExp(`^applied \\S+_init, ${EXPAND}, ${CONTRACT} on `))]);
  expect(await columns(url)).not.toContain("title");
});

it("holds back the newest after-rollout migrations only: a previous release's, which an ordinary one follows, goes in order", () => {
  const all = ["1_a", "2_contract", "3_b", "4_contract", "5_contract"];
  const marked = new Set(["2_contract", "4_contract", "5_contract"]);
  expect(rolloutMigrations(all, marked, new Set(["1_a"]))).toEqual(["1_a", "2_contract", "3_b"]);
  expect(rolloutMigrations(all, marked, new Set(["1_a", "4_contract"]))).toEqual(["1_a", "2_contract", "3_b", "4_contract"]);
  expect(rolloutMigrations(all, marked, new Set(["1_a", "4_contract", "5_contract"]))).toEqual(all);
  expect(rolloutMigrations(all, marked, new Set())).toEqual(all);
  expect(rolloutMigrations(all, new Set(), new Set(["1_a"]))).toEqual(all);
});
