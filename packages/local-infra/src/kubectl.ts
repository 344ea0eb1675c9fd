/**
 * kubectl for the deployment tests: `kubectl kustomize` renders the Kubernetes overlays exactly as
 * `kubectl apply -k` would, without a cluster. This machine kind ships one (/usr/bin/kubectl, kustomize
 * v5); where none is found, or its kustomize is older than v4 (the overlays' generators with `behavior:
 * merge` and patches by target need it), the `kubectl` package is installed with apt-get, like
 * Tesseract and Chromium, from whichever configured repository has it. Debian bookworm's own
 * `kubernetes-client` is kubectl 1.20, whose kustomize is too old: it is not taken.
 */
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { OutputTail } from "./child-process";

const INSTALL_LOCK = "/tmp/meter-kubectl-install.lock";
const MIN_KUSTOMIZE_MAJOR = 4;

export interface KubectlInfo {
  binary: string;
  /** e.g. `v1.32.4`. */
  version: string;
  /** The kustomize built into it, e.g. `v5.5.0`. */
  kustomize: string;
  installedNow: boolean;
}

export interface EnsureKubectlOptions {
  /** Install Debian's package when kubectl is missing or too old. Default true. */
  install?: boolean;
  log?: (line: string) => void;
}

export class LocalKubectlError extends Error {
  constructor(
    readonly code: "KUBECTL_NOT_INSTALLED" | "KUBECTL_INSTALL_FAILED",
    message: string,
  ) {
    super(message);
    this.name = "LocalKubectlError";
  }
}

/** What `kubectl version --client` reports, or undefined when there is no usable kubectl on PATH. */
export async function probeKubectl(): Promise<Omit<KubectlInfo, "installedNow"> | undefined> {
  try {
    const { stdout } = await promisify(execFile)("kubectl", ["version", "--client"], { encoding: "utf8", timeout: 30_000 });
    const version = /Client Version:\s*(\S+)/.exec(stdout)?.[1];
    const kustomize = /Kustomize Version:\s*(\S+)/.exec(stdout)?.[1];
    if (!version || !kustomize) return undefined;
    return { binary: "kubectl", version, kustomize };
  } catch {
    return undefined;
  }
}

const kustomizeMajor = (version: string): number => Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);

function run(command: string, args: string[], log?: (line: string) => void): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    const tail = new OutputTail(log);
    tail.attach(child.stdout);
    tail.attach(child.stderr);
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, output: tail.toString() }));
  });
}

/** Makes sure a kubectl with kustomize 4 or newer is on PATH, installing the `kubectl` package if not. */
export async function ensureKubectl(options: EnsureKubectlOptions = {}): Promise<KubectlInfo> {
  const log = options.log ?? (() => {});
  const before = await probeKubectl();
  if (before && kustomizeMajor(before.kustomize) >= MIN_KUSTOMIZE_MAJOR) return { ...before, installedNow: false };
  const what = before ? `its kustomize ${before.kustomize} is older than v${MIN_KUSTOMIZE_MAJOR}` : "kubectl is not installed";
  if (options.install === false) throw new LocalKubectlError("KUBECTL_NOT_INSTALLED", `${what} (install: false)`);
  if (process.getuid?.() !== 0) throw new LocalKubectlError("KUBECTL_NOT_INSTALLED", `${what}: run \`apt-get install kubectl\` as root`);
  log(`${what}: installing the kubectl package with apt-get`);
  const script =
    "apt-get update -q || echo 'apt-get update failed: installing from the package lists we have'; " +
    "apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 kubectl";
  const { code, output } = await run("flock", ["-w", "900", INSTALL_LOCK, "sh", "-c", script], log);
  const after = await probeKubectl();
  if (code !== 0 || !after || kustomizeMajor(after.kustomize) < MIN_KUSTOMIZE_MAJOR) {
    throw new LocalKubectlError("KUBECTL_INSTALL_FAILED", `no kubectl with kustomize v${MIN_KUSTOMIZE_MAJOR}+ after apt-get (exit ${code}):\n${output}`);
  }
  return { ...after, installedNow: true };
}
