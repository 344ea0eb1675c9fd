import { spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import path from "node:path";
import { OutputTail } from "./child-process";

/** Why an apt install did not happen: nobody may run apt-get here, or apt-get failed. */
export class AptInstallError extends Error {
  constructor(
    readonly reason: "not_permitted" | "failed",
    message: string,
  ) {
    super(message);
    this.name = "AptInstallError";
  }
}

/**
 * Installs Debian packages the project's local runs need (clamd, Tesseract, Chromium, kubectl), the
 * one way: root runs apt-get directly, anyone else through passwordless sudo. `flock` on `lockFile`
 * serializes concurrent installs (npm start and a test run on one machine), and once it holds the
 * lock the script runs `alreadyThere` (a shell test) again, so the second caller does not install
 * twice. A failed `apt-get update` (one unreachable source) does not block an install the package
 * lists already allow.
 */
export async function aptInstall(opts: {
  packages: readonly string[];
  /** A shell condition that is true when what the packages bring is already there. */
  alreadyThere: string;
  lockFile: string;
  log?: (line: string) => void;
}): Promise<void> {
  const log = opts.log ?? (() => {});
  const isRoot = process.getuid?.() === 0;
  const packages = opts.packages.join(" ");
  if (!isRoot && !onPath("sudo")) {
    throw new AptInstallError("not_permitted", `this user is not root (and has no sudo): run \`apt-get install ${packages}\` as root`);
  }
  const apt = isRoot ? "apt-get" : "sudo -n apt-get";
  const install =
    `${apt} install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 ` +
    `-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold ${packages}`;
  const script =
    `if ${opts.alreadyThere}; then echo '${packages}: installed by a concurrent run'; ` +
    `else ${apt} update -q || echo 'apt-get update failed: installing from the package lists we have'; ${install}; fi`;
  const [command, args] = onPath("flock") ? ["flock", ["-w", "900", opts.lockFile, "sh", "-c", script]] : ["sh", ["-c", script]];
  log(`installing ${packages} with apt-get`);
  const started = Date.now();
  const { code, output } = await runCommand(command, args, log);
  if (code !== 0) throw new AptInstallError("failed", `installing ${packages} failed (exit ${code}):\n${output}`);
  log(`${packages} installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** The full path of an executable on PATH (or in the sbin folders apt's daemons go to), if any. */
export function findOnPath(binary: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin"]) {
    if (!dir) continue;
    const candidate = path.join(dir, binary);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

function onPath(binary: string): boolean {
  return findOnPath(binary) !== undefined;
}

/** Runs a command to its end, its output kept (and passed line by line to `log`). */
export function runCommand(command: string, args: string[], log?: (line: string) => void): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive", NEEDRESTART_MODE: "a" },
    });
    const tail = new OutputTail(log);
    tail.attach(child.stdout);
    tail.attach(child.stderr);
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, output: tail.toString() }));
  });
}
