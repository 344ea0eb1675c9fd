// Runs before any dependency is installed, so it is plain Node on whatever Node the machine has. When
// that is older than package.json's `nodeRuntime`, it only bootstraps: the pinned Node goes into
// .tools/node from the npm registry and everything after runs on it. Then the pinned pnpm goes into
// .tools/ (no global install, no corepack download), the workspace is installed from the lockfile, and
// a TypeScript entry point takes over, run by tsx.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chooseNode, installNode, nodeVersionOf } from "./node-runtime.mjs";

/** When the command began, so the TypeScript side can report the whole time, installation included. */
const startedAt = String(Date.now());

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const pnpmVersion = pkg.packageManager.replace(/^pnpm@/, "").split("+")[0];
const toolsDir = path.join(root, ".tools");
const nodeDir = path.join(toolsDir, "node");
const toolsNode = path.join(nodeDir, "bin", "node");
const pnpmEntry = path.join(toolsDir, "node_modules", "pnpm", "bin", "pnpm.cjs");

/** The Node that runs pnpm, its lifecycle scripts and the workspace, and their environment. */
let runtime = { node: process.execPath, env: process.env };

/** Runs a command to its end; throws when it fails. */
function attempt(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
  if (r.status !== 0) throw Object.assign(new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal})`), { exitCode: r.status ?? 1 });
}

/** Runs a command to its end; exits with its code when it fails. */
function run(cmd, args, opts = {}) {
  try {
    attempt(cmd, args, opts);
  } catch (e) {
    console.error(`\n${e.message}`);
    process.exit(e.exitCode);
  }
}

/**
 * The pinned Node from .tools/node when the machine's is older, and an environment in which every
 * child finds it first: `node` on PATH (package bin shims, lifecycle scripts), NODE and
 * npm_node_execpath (which `npm run` set to the machine's Node) and its own headers for node-gyp.
 */
function ensureNode() {
  const pinned = pkg.nodeRuntime;
  const choice = chooseNode({ machine: process.versions.node, pinned, installed: nodeVersionOf(toolsNode) });
  if (choice.use === "machine") return { node: process.execPath, env: process.env };
  if (choice.install) {
    console.log(`installing Node ${pinned} into .tools/node (this machine's Node ${process.versions.node} only bootstraps)`);
    try {
      installNode({ version: pinned, nodeDir, run: attempt });
    } catch (e) {
      console.error(`\ncould not install Node ${pinned}: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    }
  }
  const bin = path.dirname(toolsNode);
  return {
    node: toolsNode,
    env: {
      ...process.env,
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}`,
      NODE: toolsNode,
      npm_node_execpath: toolsNode,
      npm_config_nodedir: nodeDir,
    },
  };
}

function installedPnpmVersion() {
  if (!existsSync(pnpmEntry)) return undefined;
  const r = spawnSync(runtime.node, [pnpmEntry, "--version"], { encoding: "utf8", env: runtime.env });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export function ensureDependencies() {
  const [major] = process.versions.node.split(".").map(Number);
  if (major < 20) {
    console.error(`Node ${process.versions.node} is too old even to bootstrap: this project needs Node 20 or newer on the machine.`);
    process.exit(1);
  }
  runtime = ensureNode();
  if (installedPnpmVersion() !== pnpmVersion) {
    console.log(`installing pnpm ${pnpmVersion} into .tools/`);
    run("npm", ["install", "--prefix", toolsDir, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", `pnpm@${pnpmVersion}`]);
  }
  // pnpm runs on the workspace's Node, so a package it builds is built for that Node's ABI. No prompt
  // when a store or layout change means node_modules must be rebuilt: there may be no terminal.
  run(runtime.node, [pnpmEntry, "install", "--frozen-lockfile", "--reporter=append-only", "--config.confirmModulesPurge=false"], { env: runtime.env });
}

/** Runs a TypeScript entry with tsx on the workspace's Node, forwarding Ctrl-C / SIGTERM, and exits with its code. */
export function handOver(entry, args = []) {
  const tsxPackage = path.join(root, "node_modules", "tsx");
  const tsx = path.join(tsxPackage, JSON.parse(readFileSync(path.join(tsxPackage, "package.json"), "utf8")).bin);
  const child = spawn(runtime.node, [tsx, path.join(root, entry), ...args], {
    cwd: root,
    stdio: "inherit",
    env: { ...runtime.env, METER_STARTED_AT: startedAt },
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
