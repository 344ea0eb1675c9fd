import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { deployMigrations, dropDatabase, ensureClient, ensureDatabase, generateClient } from "../src";
import { FIXTURE_DIR, scratchDatabaseUrl } from "./support/scratch-database";

const run = promisify(execFile);
const GENERATED_DIR = path.join(FIXTURE_DIR, "src", "generated", "prisma");

describe("generateClient", () => {
  const url = scratchDatabaseUrl("generate");

  beforeAll(async () => {
    await ensureDatabase(url);
    await deployMigrations({ serviceDir: FIXTURE_DIR, databaseUrl: url });
  });
  afterAll(() => dropDatabase(url));

  it("generates a client that writes and reads rows through @prisma/adapter-pg", async () => {
    await rm(GENERATED_DIR, { recursive: true, force: true });

    await expect(generateClient(FIXTURE_DIR)).resolves.toContain("Generated Prisma Client");
    expect(existsSync(path.join(GENERATED_DIR, "client.ts"))).toBe(true);

    const { stdout } = await run(process.execPath, [require.resolve("tsx/cli"), path.join(__dirname, "support", "client-roundtrip.ts"), FIXTURE_DIR, url]);
    expect(JSON.parse(stdout)).toEqual({ email: "ada@example.com", notes: [{ title: "first", status: "draft" }] });
  }, 60_000);

  it("ensureClient generates only when the client is missing or was made from another schema", async () => {
    await rm(GENERATED_DIR, { recursive: true, force: true });
    await expect(ensureClient(FIXTURE_DIR)).resolves.toBe("generated");
    expect(existsSync(path.join(GENERATED_DIR, "client.ts"))).toBe(true);

    await expect(ensureClient(FIXTURE_DIR)).resolves.toBe("unchanged");

    // What a schema edit or a Prisma upgrade looks like from here: the stamp no longer matches.
    await writeFile(path.join(GENERATED_DIR, ".generated-from"), "another schema");
    await expect(ensureClient(FIXTURE_DIR)).resolves.toBe("generated");
    await expect(ensureClient(FIXTURE_DIR)).resolves.toBe("unchanged");
  }, 60_000);
});
