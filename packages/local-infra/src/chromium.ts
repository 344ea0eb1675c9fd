/**
 * Debian's Chromium for the browser tests (the cabinet's, driven by playwright-core), installed with
 * apt-get like clamd and Tesseract: a test tool's own browser download cannot work here, and a
 * distribution package is what a machine without internet access can get.
 */
import { accessSync, constants as fsConstants } from "node:fs";
import { aptInstall, AptInstallError, runCommand } from "./apt";

export const CHROMIUM_PACKAGES = ["chromium"] as const;
/** Where Debian's package puts the browser; playwright-core is pointed at it (`executablePath`). */
export const CHROMIUM_EXECUTABLE = "/usr/bin/chromium";

/**
 * Flags for a headless run on a machine without network or GPU. The background-networking ones matter:
 * without them Chromium keeps opening connections to Google's hosts, which a closed network refuses.
 * `--no-sandbox` because the tests may run as root, where Chromium's sandbox refuses to start.
 */
export const CHROMIUM_HEADLESS_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
] as const;

const INSTALL_LOCK = "/tmp/meter-chromium-install.lock";

export interface EnsureChromiumOptions {
  /** Install the Debian package with apt-get when the browser is missing. Default true. */
  install?: boolean;
  /** Progress lines: our own and apt-get's output. Default: dropped. */
  log?: (line: string) => void;
}

export interface ChromiumInfo {
  executable: string;
  /** What `chromium --version` printed, e.g. `Chromium 156.0.8078.79 built on Debian ...`. */
  version: string;
  installedNow: boolean;
}

export class LocalChromiumError extends Error {
  constructor(
    readonly code: "CHROMIUM_NOT_INSTALLED" | "CHROMIUM_INSTALL_FAILED",
    message: string,
  ) {
    super(message);
    this.name = "LocalChromiumError";
  }
}
function executable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The installed browser's version line, or undefined when it is missing or does not run. */
export async function probeChromium(): Promise<string | undefined> {
  if (!executable(CHROMIUM_EXECUTABLE)) return undefined;
  const { code, output } = await runCommand(CHROMIUM_EXECUTABLE, ["--version"]);
  // Debian's wrapper script may print a shell warning first; the version line starts with the name.
  return code === 0
    ? (output
        .split("\n")
        .find((l) => /^Chromium \d/.test(l.trim()))
        ?.trim() ?? output.trim())
    : undefined;
}

/**
 * Installs Debian's chromium: root runs apt-get itself, anyone else through passwordless sudo; `flock`
 * serialises concurrent installs (two test runs on one machine), and the script checks again once it
 * holds the lock so the second one does not install twice.
 */
export async function installChromium(log: (line: string) => void = () => {}): Promise<void> {
  try {
    await aptInstall({ packages: CHROMIUM_PACKAGES, alreadyThere: `[ -x ${CHROMIUM_EXECUTABLE} ]`, lockFile: INSTALL_LOCK, log });
  } catch (e) {
    if (!(e instanceof AptInstallError)) throw e;
    throw new LocalChromiumError(e.reason === "not_permitted" ? "CHROMIUM_NOT_INSTALLED" : "CHROMIUM_INSTALL_FAILED", `Chromium: ${e.message}`);
  }
}

/** Makes sure /usr/bin/chromium runs, installing Debian's package when it does not (unless `install: false`). */
export async function ensureChromium(options: EnsureChromiumOptions = {}): Promise<ChromiumInfo> {
  const log = options.log ?? (() => {});
  const before = await probeChromium();
  if (before) return { executable: CHROMIUM_EXECUTABLE, version: before, installedNow: false };
  if (options.install === false) throw new LocalChromiumError("CHROMIUM_NOT_INSTALLED", `${CHROMIUM_EXECUTABLE} is missing (install: false)`);
  log(`Chromium: ${CHROMIUM_EXECUTABLE} missing`);
  await installChromium(log);
  const after = await probeChromium();
  if (!after) throw new LocalChromiumError("CHROMIUM_INSTALL_FAILED", `apt-get reported success but ${CHROMIUM_EXECUTABLE} does not run`);
  return { executable: CHROMIUM_EXECUTABLE, version: after, installedNow: true };
}
