import { spawn, execFileSync } from "node:child_process";
import path from "node:path";
import { Client } from "pg";
import { ensureClient, listServices, serviceDatabaseUrl, withDatabaseName } from "@meter/db-tools";
import { ensureChromium, ensureKubectl, ensurePrerequisites, ensureTesseract, repoRoot } from "@meter/local-infra";

/**
 * `npm test`: typecheck, lint, format, every jest suite against real PostgreSQL, RabbitMQ, object store and
 * clamd, then the books check over every billing database the suites created, then the money path
 * check over those the money suites recorded (one organization per transaction), then cleanup. Test
 * databases and vhosts carry this run's id, so parallel runs and leftovers of a killed run never mix.
 * Extra arguments go to jest (e.g. `npm test -- gateway` runs one folder).
 */
const root = repoRoot();
const run = process.env.METER_TEST_RUN ?? `r${Date.now().toString(36)}`;
const env = { ...process.env, METER_TEST_RUN: run, METER_KEEP_TEST_DATABASES: "1", NODE_ENV: "test" };
const bin = (name: string) => path.join(root, "node_modules", ".bin", name);

function step(name: string, cmd: string, args: string[]): Promise<boolean> {
  const startedAt = Date.now();
  console.log(`\n=== ${name}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: "inherit" });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.on("exit", (code) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      console.log(`=== ${name}: ${code === 0 ? "passed" : "FAILED"} (${((Date.now() - startedAt) / 1000).toFixed(1)} s)`);
      resolve(code === 0);
    });
  });
}

async function main(): Promise<number> {
  const jestArgs = process.argv.slice(2);
  // bootstrap.mjs chose it (.tools/node when the machine's is older); every tool below inherits it.
  console.log(`[test] Node ${process.versions.node} (${process.execPath})`);
  const pgUrl = serviceDatabaseUrl(path.join(root, "services", "billing-ledger"));
  const pg = new URL(pgUrl);
  const rabbit = new URL(process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  // Every gateway counts its keys' limits in Redis (gateway/test/key-limits.test.ts).
  const redis = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  await ensurePrerequisites({
    postgres: { host: pg.hostname, port: Number(pg.port || 5432) },
    rabbitmq: { host: rabbit.hostname, port: Number(rabbit.port || 5672) },
    redis: { host: redis.hostname, port: Number(redis.port || 6379) },
    log: (line) => console.log(`[test] ${line}`),
  });
  // The OCR engine's tests run the real Tesseract (Debian's, installed with apt like ClamAV).
  const tesseract = await ensureTesseract({ log: (line) => console.log(`[test] ${line}`) });
  console.log(`[test] ${tesseract.version} with ${tesseract.languages.join(", ")}`);
  // The cabinet's browser test drives Debian's Chromium (apt, like Tesseract; never a downloaded browser).
  console.log(`[test] ${(await ensureChromium({ log: (line) => console.log(`[test] ${line}`) })).version}`);
  // The deployment tests render the Kubernetes overlays with `kubectl kustomize` (no cluster needed).
  console.log(`[test] kubectl ${(await ensureKubectl({ log: (line) => console.log(`[test] ${line}`) })).version}`);
  console.log(`[test] run ${run}: generating database clients`);
  await Promise.all(listServices().map((dir) => ensureClient(dir)));

  const results: [string, boolean][] = [];
  try {
    if (jestArgs.length === 0) {
      results.push(["typecheck", await step("typecheck", bin("tsc"), ["-p", "tsconfig.json"])]);
      // The cabinet's pages are browser code (DOM types, JSX): their own program.
      results.push(["typecheck (cabinet pages)", await step("typecheck (cabinet pages)", bin("tsc"), ["-p", "web/cabinet/tsconfig.json"])]);
      results.push(["lint", await step("lint", bin("eslint"), ["--max-warnings", "0", "."])]);
      results.push(["format", await step("format (prettier --check; `pnpm format` fixes)", bin("prettier"), ["--check", "--log-level", "warn", "."])]);
    }
    results.push(["jest", await step("jest", bin("jest"), ["--ci", "--maxWorkers=2", ...jestArgs])]);
    // Each a CLI run over every billing database the suites of this run created.
    const overBillingDatabases = (name: string, script: string) =>
      step(`${name} (every billing database of this run)`, bin("tsx"), [
        path.join(root, script),
        "--url",
        pgUrl,
        "--databases-like",
        `t_${run}_billing_ledger_%`,
      ]);
    results.push(["books check", await overBillingDatabases("books check", "services/billing-ledger/src/cli/ledger-check.ts")]);
    results.push(["money path check", await overBillingDatabases("money path check", "infra/local/money-path-check.ts")]);
  } finally {
    await cleanup(pgUrl);
  }
  console.log("\n=== summary");
  for (const [name, ok] of results) console.log(`  ${ok ? "passed" : "FAILED"}  ${name}`);
  return results.every(([, ok]) => ok) ? 0 : 1;
}

/** Drops every database and vhost of this run, whatever the suites left. */
async function cleanup(pgUrl: string): Promise<void> {
  const client = new Client({ connectionString: withDatabaseName(pgUrl, "postgres") });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`t_${run}_%`]);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    console.log(`[test] dropped ${rows.length} test database(s)`);
  } finally {
    await client.end();
  }
  try {
    const vhosts = execFileSync("rabbitmqctl", ["--quiet", "list_vhosts", "name"], { encoding: "utf8" })
      .split("\n")
      .map((v) => v.trim())
      .filter((v) => v.startsWith(`t_${run}_`));
    for (const v of vhosts) execFileSync("rabbitmqctl", ["--quiet", "delete_vhost", v]);
    if (vhosts.length) console.log(`[test] deleted ${vhosts.length} leftover vhost(s)`);
  } catch (e) {
    console.log(`[test] could not list RabbitMQ vhosts: ${(e as Error).message}`);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
