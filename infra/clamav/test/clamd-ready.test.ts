import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ensureClamd, repoRoot, type ClamdHandle } from "@meter/local-infra";
import { assignPorts } from "@meter/testing";

/**
 * clamd's production readiness (infra/clamav/clamd-ready.sh, the clamd pods' readinessProbe with
 * freshclam: k8s/components/clamav-freshclam) on database folders made here, the way freshclam leaves
 * them: `main` and `daily` as .cvd or .cld, each with ClamAV's 512-byte header. No official database
 * can be downloaded here, so their bodies are empty; the script reads the header alone. The PING goes
 * to a real clamd (the project's test signatures).
 */
const CLAMAV = path.join(repoRoot(), "infra/clamav");
const HOUR_S = 3600;

let clamd: ClamdHandle;
let work: string;
/** A PATH where `clamd-ping` is infra/clamav/clamd-ping.sh, as the image installs it. */
let bin: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), "meter-clamd-ready-"));
  bin = path.join(work, "bin");
  mkdirSync(bin);
  symlinkSync(path.join(CLAMAV, "clamd-ping.sh"), path.join(bin, "clamd-ping"));
  clamd = await ensureClamd({ port: 0, dataDir: path.join(work, "clamd") });
}, 120_000);
afterAll(async () => {
  await clamd?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A ClamAV database header built `ageHours` ago: `ClamAV-VDB:<date>:<version>:<sigs>:<level>:<md5>:<dsig>:<builder>:<seconds>`. */
function header(ageHours: number): string {
  const builtS = Math.floor(Date.now() / 1000) - Math.round(ageHours * HOUR_S);
  return `ClamAV-VDB:28 Nov 2026 07-39 +0000:27999:2070000:90:${"0".repeat(32)}:${"x".repeat(86)}:meter-test:${builtS}`.padEnd(512, " ");
}

/** A database folder with the project's test signatures and the given files (name -> header age in hours, or raw text). */
function folder(files: Record<string, number | string> = {}, withTestSignatures = true): string {
  const dir = mkdtempSync(path.join(work, "db-"));
  if (withTestSignatures) for (const f of readdirSync(CLAMAV).filter((n) => /\.(hdb|ndb)$/.test(n))) copyFileSync(path.join(CLAMAV, f), path.join(dir, f));
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), typeof content === "number" ? header(content) : content);
  return dir;
}

/** Runs the readiness check as the kubelet would: its exit code and what it printed. */
async function ready(dir: string, ...args: string[]): Promise<{ code: number; output: string }> {
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` };
  try {
    const { stdout, stderr } = await promisify(execFile)(path.join(CLAMAV, "clamd-ready.sh"), [dir, ...args], { env });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

const port = () => String(clamd.port);

it("is ready with the official databases freshly updated (and the test signatures beside them)", async () => {
  expect(await ready(folder({ "main.cvd": 24 * 30, "daily.cld": 3, "bytecode.cvd": 24 }), "48", port())).toEqual({ code: 0, output: "" });
});

it("is not ready with only the test signatures: they protect nothing", async () => {
  const result = await ready(folder(), "48", port());
  expect(result.code).toBe(1);
  expect(result.output).toMatch(/only the test signatures .* freshclam has not run/);
});

it("is not ready while the daily database is older than the bound, and ready again once freshclam replaced it", async () => {
  const dir = folder({ "main.cvd": 24 * 30, "daily.cvd": 49 });
  const stale = await ready(dir, "48", port());
  expect(stale.code).toBe(1);
  expect(stale.output).toMatch(/the daily database was built 49 hours ago .* over the bound of 48 hours/);
  // freshclam writes the updated database as daily.cld beside the old .cvd: the newer one counts.
  writeFileSync(path.join(dir, "daily.cld"), header(1));
  expect((await ready(dir, "48", port())).code).toBe(0);
});

it("takes the bound from its argument, 48 hours when none is given", async () => {
  const dir = folder({ "main.cld": 24 * 30, "daily.cld": 30 });
  expect((await ready(dir, "24", port())).code).toBe(1);
  expect((await ready(dir, "36", port())).code).toBe(0);
  const defaults = await ready(folder({ "main.cld": 24 * 30, "daily.cld": 50 }));
  expect(defaults.output).toMatch(/over the bound of 48 hours/);
});

it.each([
  ["no main database", { "daily.cld": 1 }, /no main\.cvd or main\.cld/],
  ["a daily database that is not one", { "main.cvd": 1, "daily.cvd": "<html>rate limited</html>" }, /daily\.cvd is not a ClamAV database/],
  ["a header without its build time", { "main.cvd": 1, "daily.cvd": "ClamAV-VDB:28 Nov 2026 07-39 +0000:27999:1:90" }, /daily\.cvd has no build time/],
])("is not ready with %s", async (_name, files, expected) => {
  const result = await ready(folder(files, false), "48", port());
  expect(result.code).toBe(1);
  expect(result.output).toMatch(expected);
});

it("is not ready when clamd does not answer, however fresh its databases", async () => {
  const result = await ready(folder({ "main.cvd": 1, "daily.cvd": 1 }), "48", String((await assignPorts(1))[0]));
  expect(result.code).toBe(1);
  expect(result.output).toMatch(/clamd does not answer PING/);
});
