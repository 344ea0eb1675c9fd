import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceCatalog } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";

/**
 * The release before this one, built from its own commit as an operator would run it: CHANGELOG.md's
 * newest released entry names its version and commit; the commit is checked out into a temporary git
 * worktree, installed from its own lockfile with this checkout's pnpm (the same store, so only what is
 * not there yet comes from the registry), and its Prisma clients generated as its own `npm test` does.
 */
export interface PreviousRelease {
  version: string;
  commit: string;
  /** The worktree: a repository root whose processes startSystem can run (`releases`). */
  root: string;
  /** Applies that release's migrations and SQL functions to a service's database, with its own tool. */
  migrate(serviceDir: string, databaseUrl: string): Promise<void>;
  /** Removes the worktree (also left behind by a run that was killed: the next run removes it). */
  remove(): void;
}

const LOCK_REASON = "meter two-release test, pid ";

/** The newest released entry of CHANGELOG.md (not `Unreleased`) and the commit it was released from. */
export function previousReleaseOf(changelog: string): { version: string; commit: string } {
  const entry = /^## (\d+\.\d+\.\d+)\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(changelog);
  if (!entry) throw new Error("CHANGELOG.md names no release");
  const commit = /^Released from commit `([0-9a-f]{40})`/m.exec(entry[2]!)?.[1];
  if (!commit) throw new Error(`CHANGELOG.md: the ${entry[1]} entry does not say "Released from commit \`<sha>\`"`);
  return { version: entry[1]!, commit };
}

function git(args: string[]): string {
  return execFileSync("git", args, { cwd: repoRoot(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Worktrees an earlier run of this test left when it was killed before its cleanup ran. */
function removeLeftovers(): void {
  const entries = git(["worktree", "list", "--porcelain"]).split("\n\n");
  for (const entry of entries) {
    const where = /^worktree (.+)$/m.exec(entry)?.[1];
    const pid = new RegExp(`^locked ${LOCK_REASON}(\\d+)$`, "m").exec(entry)?.[1];
    if (where && pid && !alive(Number(pid))) {
      git(["worktree", "remove", "--force", "--force", where]);
      rmSync(where, { recursive: true, force: true });
    }
  }
  git(["worktree", "prune"]);
}

/** Runs a command of the previous release's own checkout on this Node, failing with its output. */
function run(cwd: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  // This Node first on PATH: pnpm's lifecycle scripts and their native builds use it (bootstrap.mjs does the same).
  const nodeDir = path.dirname(process.execPath);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd,
      env: {
        ...process.env,
        PATH: `${nodeDir}${path.delimiter}${process.env.PATH ?? ""}`,
        NODE: process.execPath,
        npm_node_execpath: process.execPath,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
    child.stderr.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(" ")} in ${cwd} exited ${code}:\n${output}`))));
  });
}

/** An async snippet run by the checkout's own tsx, with its own packages; a rejection fails it. */
function tsxEval(root: string, code: string, env: Record<string, string> = {}): Promise<void> {
  const tsx = path.join(root, "node_modules", "tsx", "dist", "cli.mjs");
  return run(root, [tsx, "--eval", `(async () => { ${code} })().catch((e) => { console.error(e); process.exit(1); });`], env);
}

export async function checkOutPreviousRelease(): Promise<PreviousRelease> {
  const { version, commit } = previousReleaseOf(readFileSync(path.join(repoRoot(), "CHANGELOG.md"), "utf8"));
  try {
    git(["cat-file", "-e", `${commit}^{commit}`]);
  } catch {
    throw new Error(`commit ${commit} (release ${version}) is not in this clone: the two-release test needs the git history`);
  }
  removeLeftovers();
  const root = mkdtempSync(path.join(tmpdir(), `meter-release-${version}-`));
  const remove = () => {
    try {
      git(["worktree", "remove", "--force", "--force", root]);
    } finally {
      rmSync(root, { recursive: true, force: true });
      git(["worktree", "prune"]);
    }
  };
  try {
    git(["worktree", "add", "--detach", "--lock", "--reason", `${LOCK_REASON}${process.pid}`, root, commit]);
    const pnpm = path.join(repoRoot(), ".tools", "node_modules", "pnpm", "bin", "pnpm.cjs");
    await run(root, [pnpm, "install", "--frozen-lockfile", "--prefer-offline", "--reporter=append-only", "--config.confirmModulesPurge=false"]);
    // What its `npm test` does before jest (infra/local/test.ts at that release).
    await tsxEval(
      root,
      'const { ensureClient, listServices } = require("@meter/db-tools"); await Promise.all(listServices().map((dir) => ensureClient(dir)));',
    );
  } catch (e) {
    remove();
    throw e;
  }
  return {
    version,
    commit,
    root,
    async migrate(serviceDir, databaseUrl) {
      const service = Object.values(ServiceCatalog).find((s) => path.resolve(repoRoot(), s.dir) === path.resolve(serviceDir));
      if (!service) throw new Error(`${serviceDir} is no service of this checkout`);
      await tsxEval(
        root,
        'const { deployMigrations } = require("@meter/db-tools"); await deployMigrations({ serviceDir: process.env.SERVICE_DIR, databaseUrl: process.env.DATABASE_URL });',
        { SERVICE_DIR: path.join(root, service.dir), DATABASE_URL: databaseUrl },
      );
    },
    remove,
  };
}
