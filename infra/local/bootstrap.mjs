// Runs before any dependency is installed, so it is plain Node: it puts the pinned pnpm into
// .tools/ (no global install, no corepack download), installs the workspace from the lockfile, and
// then hands over to a TypeScript entry point run by tsx.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** When the command began, so the TypeScript side can report the whole time, installation included. */
const startedAt = String(Date.now());

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const pnpmVersion = pkg.packageManager.replace(/^pnpm@/, "").split("+")[0];
const toolsDir = path.join(root, ".tools");
const pnpmBin = path.join(toolsDir, "node_modules", ".bin", "pnpm");

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
  if (r.status !== 0) {
    console.error(`\n${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

function installedPnpmVersion() {
  if (!existsSync(pnpmBin)) return undefined;
  const r = spawnSync(pnpmBin, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export function ensureDependencies() {
  const [major] = process.versions.node.split(".").map(Number);
  if (major < 20) {
    console.error(`Node ${process.versions.node} is too old: this project needs Node 20.19 or newer.`);
    process.exit(1);
  }
  if (installedPnpmVersion() !== pnpmVersion) {
    console.log(`installing pnpm ${pnpmVersion} into .tools/`);
    run("npm", ["install", "--prefix", toolsDir, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", `pnpm@${pnpmVersion}`]);
  }
  // No prompt when a store or layout change means node_modules must be rebuilt: there may be no terminal.
  run(pnpmBin, ["install", "--frozen-lockfile", "--reporter=append-only", "--config.confirmModulesPurge=false"]);
}

/** Runs a TypeScript entry with tsx, forwarding Ctrl-C / SIGTERM, and exits with its code. */
export function handOver(entry, args = []) {
  const tsx = path.join(root, "node_modules", ".bin", "tsx");
  const child = spawn(tsx, [path.join(root, entry), ...args], { cwd: root, stdio: "inherit", env: { ...process.env, METER_STARTED_AT: startedAt } });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
