import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import type { Deployable } from "@meter/contracts";
import { AFTER_ROLLOUT_FILE } from "@meter/db-tools";
import { repoRoot, withAssignedPorts } from "@meter/local-infra";
import { LOCAL_MODEL, operatorOf, prepareEnvironment, testDatabaseNamePrefix, testKeyEnv, testKeySet, type TestEnvironment } from "@meter/testing";
import { buildImageFolder } from "../build";
import { IMAGES } from "../deployables";

/**
 * What each image would run, run here without Docker: every deployable's folder built by
 * infra/images/build.ts (as the Dockerfile's build stage does), each service's databases created with
 * its two roles by the SQL the deployments use (k8s/dev-dependencies/postgres/service-database.sql),
 * its migrations applied by its own `dist/migrate.js deploy` as the owner role (what its migration Job
 * runs), waited for by every image's `dist/migrate.js wait` as the runtime role, and every process started
 * with plain `node` from its folder, as the runtime role. Then a key is made and a paid request, a
 * file declaration and the OpenAPI document go through the gateway; then each process stops on SIGTERM.
 */
const root = repoRoot();
const out = mkdtempSync(path.join(os.tmpdir(), "meter-images-"));
const prefix = `${testDatabaseNamePrefix()}img_${randomBytes(3).toString("hex")}_`;
const processes: { deployable: Deployable; child: ChildProcess; log: string[] }[] = [];
const databases: string[] = [];
let environment: TestEnvironment;
let gatewayUrl: string;

const admin = "postgresql://postgres@127.0.0.1:5432/postgres";
const envPrefixOf = (image: (typeof IMAGES)[number]) => image.service.toUpperCase().replace(/-/g, "_");
const roleUrl = (service: string, role: "owner" | "app", password: string) =>
  `postgresql://${prefix}${service}_${role}:${password}@127.0.0.1:5432/${prefix}${service}`;

/** One service's database and roles, by the deployments' own SQL file run with psql. */
function createServiceDatabase(service: string, passwords: { owner: string; app: string }): void {
  execFileSync(
    "psql",
    [
      "-q",
      admin,
      ...["-v", `db=${prefix}${service}`, "-v", `owner=${prefix}${service}_owner`, "-v", `app=${prefix}${service}_app`],
      ...["-v", `owner_password=${passwords.owner}`, "-v", `app_password=${passwords.app}`],
      "-f",
      path.join(root, "k8s/dev-dependencies/postgres/service-database.sql"),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  databases.push(service);
}

function run(cwd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, output }));
  });
}

/** SIGKILL, and the exit awaited (a start being tried again must find its ports free). */
async function stopNow(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

async function waitReady(deployable: string, url: string, child: ChildProcess, log: string[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${deployable} exited while starting:\n${log.join("")}`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${deployable} not ready at ${url}:\n${log.join("")}`);
}

beforeAll(async () => {
  // Hard links: the same files as copies would be, without writing 800 MB on every run.
  const built = [];
  for (const image of IMAGES) built.push(await buildImageFolder(image, out, { link: true }));
  expect(built.map((b) => b.deployable)).toEqual(IMAGES.map((i) => i.deployable));
  environment = await prepareEnvironment(["files"]);

  const keys = testKeySet();
  const roles: Record<string, { owner: string; app: string }> = {};
  for (const image of IMAGES.filter((i) => i.migrations === "deploy")) {
    const service = image.service.replace(/-/g, "_");
    roles[image.service] = { owner: randomBytes(12).toString("hex"), app: randomBytes(12).toString("hex") };
    createServiceDatabase(service, roles[image.service]!);
  }

  // Migrations first, by each API image's step (its migration Job), as the owner; then every pod's wait
  // for them (API and worker), as the runtime role.
  // In production the step refuses what the deployable's own process would: the example's placeholder.
  const first = IMAGES.find((i) => i.migrations === "deploy")!;
  const placeholder = roleUrl(first.service.replace(/-/g, "_"), "owner", `change-me-${first.service}-owner`);
  const refused = await run(path.join(out, first.deployable, "app"), ["dist/migrate.js", "deploy"], {
    NODE_ENV: "production",
    [`${envPrefixOf(first)}_MIGRATION_DATABASE_URL`]: placeholder,
  });
  expect(refused).toMatchObject({ code: 1, output: expect.stringContaining(`${envPrefixOf(first)}_MIGRATION_DATABASE_URL: holds a placeholder`) });
  for (const image of IMAGES.filter((i) => i.migrations === "deploy")) {
    const owner = { [`${envPrefixOf(image)}_MIGRATION_DATABASE_URL`]: roleUrl(image.service.replace(/-/g, "_"), "owner", roles[image.service]!.owner) };
    const result = await run(path.join(out, image.deployable, "app"), ["dist/migrate.js", "deploy"], owner);
    expect({ deployable: image.deployable, code: result.code, output: result.output }).toMatchObject({ code: 0 });
  }
  // An after-rollout migration keeps its marker in the image: without it an upgrade's Job would apply it
  // under the previous release's pods (packages/db-tools after-rollout.ts).
  for (const image of IMAGES.filter((i) => i.migrations === "deploy")) {
    const marked = (root: string) => {
      const dir = path.join(root, image.dir, "prisma", "migrations");
      return readdirSync(dir).filter((folder) => existsSync(path.join(dir, folder, AFTER_ROLLOUT_FILE)));
    };
    expect({ deployable: image.deployable, marked: marked(path.join(out, image.deployable, "app")) }).toEqual({
      deployable: image.deployable,
      marked: marked(repoRoot()),
    });
  }
  for (const image of IMAGES.filter((i) => i.migrations)) {
    const runtime = { [`${envPrefixOf(image)}_DATABASE_URL`]: roleUrl(image.service.replace(/-/g, "_"), "app", roles[image.service]!.app) };
    const result = await run(path.join(out, image.deployable, "app"), ["dist/migrate.js", "wait"], runtime);
    expect({ deployable: image.deployable, code: result.code, output: result.output }).toMatchObject({
      code: 0,
      output: expect.stringContaining(": starting"),
    });
  }

  // The processes call each other both ways, so each is told its port and the others' before any starts;
  // should one find its port taken, they all start again on others (docs/architecture.md, "Tests").
  gatewayUrl = await withAssignedPorts(IMAGES.length + 1, async (assigned) => {
    const ports = Object.fromEntries(IMAGES.map((i, n) => [i.deployable, assigned[n]!])) as Record<Deployable, number>;
    const gatewayInternal = assigned[IMAGES.length]!;
    const url = (d: Deployable) => `http://127.0.0.1:${ports[d]}`;
    const shared: Record<string, string> = {
      ...environment.env,
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      HOST: "127.0.0.1",
      INTERNAL_PUBLIC_KEYS: keys.publicKeys,
      TEXT_URL: url("text"),
      MEDIA_JOBS_URL: url("media-jobs"),
      FILES_URL: url("files"),
      BILLING_LEDGER_URL: url("billing-ledger"),
      MCP_URL: url("mcp"),
      GATEWAY_URL: url("gateway"),
      PUBLIC_BASE_URL: url("gateway"),
      GATEWAY_INTERNAL_PORT: String(gatewayInternal),
      MEDIA_ENABLED: "true",
      CATALOG_REFRESH_MS: "300",
    };
    for (const key of Object.keys(shared)) if (key.endsWith("_DATABASE_URL")) delete shared[key];
    for (const image of IMAGES) {
      const prefixed = image.service.toUpperCase().replace(/-/g, "_");
      const env: Record<string, string> = {
        ...shared,
        // Its signing key (billing-ledger's grant key too), as the local runner gives them.
        ...testKeyEnv(image.deployable),
        [image.portSetting]: String(ports[image.deployable]),
      };
      if (image.migrations) env[`${prefixed}_DATABASE_URL`] = roleUrl(image.service.replace(/-/g, "_"), "app", roles[image.service]!.app);
      const log: string[] = [];
      const child = spawn(process.execPath, ["--enable-source-maps", `dist/${path.basename(image.entry, ".ts")}.js`], {
        cwd: path.join(out, image.deployable, "app"),
        env: { PATH: process.env.PATH ?? "", ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout!.on("data", (d: Buffer) => log.push(d.toString()));
      child.stderr!.on("data", (d: Buffer) => log.push(d.toString()));
      processes.push({ deployable: image.deployable, child, log });
    }
    try {
      for (const p of processes) {
        const port = p.deployable === "gateway" ? gatewayInternal : ports[p.deployable];
        await waitReady(p.deployable, `http://127.0.0.1:${port}/readyz`, p.child, p.log);
      }
    } catch (e) {
      await Promise.all(processes.splice(0).map((p) => stopNow(p.child)));
      throw e;
    }
    return url("gateway");
  });
}, 360_000);

afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  const client = new Client({ connectionString: admin });
  await client.connect();
  for (const service of databases) {
    await client.query(`DROP DATABASE IF EXISTS "${prefix}${service}" WITH (FORCE)`);
    await client.query(`DROP ROLE IF EXISTS "${prefix}${service}_owner"`);
    await client.query(`DROP ROLE IF EXISTS "${prefix}${service}_app"`);
  }
  await client.end();
  await environment?.close();
  rmSync(out, { recursive: true, force: true });
}, 60_000);

it("ships no development tools: no tsx, TypeScript or Prisma CLI, only the migration engine's files", () => {
  for (const image of IMAGES) {
    const modules = path.join(out, image.deployable, "node_modules");
    for (const tool of ["tsx", "typescript", "@prisma/studio-core", "esbuild-register", "@swc/core"])
      expect({ image: image.deployable, tool, present: existsSync(path.join(modules, tool)) }).toMatchObject({ present: false });
    if (image.migrations) expect(existsSync(path.join(modules, "prisma", "build", "index.js"))).toBe(false);
  }
});

it("serves a paid request, a file declaration and the OpenAPI document through the gateway, every process started with plain node", async () => {
  const operator = operatorOf(gatewayUrl, environment.adminToken);
  await operator.admin("PUT", `/admin/v1/models/${LOCAL_MODEL}`, {
    enabled: true,
    provider: { kind: "local" },
    operations: { text: { input_microrub_per_1k_tokens: 1000, output_microrub_per_1k_tokens: 3000 } },
  });
  await new Promise((r) => setTimeout(r, 1000));
  const account = await operator.account();
  const message = await fetch(`${gatewayUrl}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json", "idempotency-key": randomUUID() },
    body: JSON.stringify({ model: LOCAL_MODEL, max_tokens: 50, messages: [{ role: "user", content: "hello from plain node" }] }),
  });
  expect(message.status).toBe(200);
  expect(((await message.json()) as { billing: { status: string } }).billing.status).toBe("settled");

  const file = await fetch(`${gatewayUrl}/v1/files`, {
    method: "POST",
    headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
    body: JSON.stringify({ filename: "a.png", mime_type: "image/png", size_bytes: 10, sha256: "0".repeat(64) }),
  });
  expect(file.status).toBe(201);
  expect((await fetch(`${gatewayUrl}/openapi.json`)).status).toBe(200);
  expect((await operator.settledBalance(account.organizationId)).reserved_microrub).toBe(0);
}, 60_000);

it("stops every process cleanly on SIGTERM", async () => {
  // A process still there after 30 s is named with its log, where it says every 15 s which step of its
  // stop it waits for (a hang, not a slow stop: each takes about a second).
  const exits = await Promise.all(
    processes.map(
      (p) =>
        new Promise<{ deployable: string; code: number | null; log?: string }>((resolve) => {
          const stuck = setTimeout(() => resolve({ deployable: p.deployable, code: null, log: p.log.join("").slice(-8000) }), 30_000);
          p.child.once("exit", (code) => {
            clearTimeout(stuck);
            resolve({ deployable: p.deployable, code });
          });
          p.child.kill("SIGTERM");
        }),
    ),
  );
  expect(exits.filter((e) => e.code !== 0)).toEqual([]);
}, 60_000);
