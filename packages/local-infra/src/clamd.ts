/**
 * A local ClamAV daemon for `npm start` and the tests, on the container's configuration
 * (infra/clamav/clamd.conf: the same limits) with local paths and address.
 *
 * There is no internet here, so no official signatures and no freshclam: clamd loads only the
 * project-owned database in infra/clamav (it refuses to start with an empty one). That database
 * detects the EICAR test string, which is all local runs and tests need; it is not protection.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { aptInstall, AptInstallError, findOnPath } from "./apt";
import { OutputTail, detachFromEventLoop, exited, hasExited, killOnParentExit, sleep, terminate } from "./child-process";
import { assertPort, withAssignedPorts } from "./port";
import { clamavSignaturesDir, clamdConfigFile, localStateDir } from "./repo-paths";

export interface EnsureClamdOptions {
  /** 0: a port outside the ephemeral range of its own (the tests' way); otherwise a clamd already there is reused. */
  port?: number;
  host?: string;
  /**
   * Holds `<port>/clamd.conf`, `<port>/db/` (a copy of the signatures) and `<port>/tmp/`: one
   * subfolder per port, so clamds started side by side never rewrite each other's files.
   * Default `<repo>/.local/clamd/`.
   */
  dataDir?: string;
  /** Folder of signature files to load. Default `<repo>/infra/clamav/`. */
  signaturesDir?: string;
  /** The clamd.conf whose settings are used, its paths and address replaced. Default `<repo>/infra/clamav/clamd.conf`. */
  configFile?: string;
  /** Install Debian's clamav-daemon with apt-get when clamd is missing. Default true. */
  install?: boolean;
  /** How long clamd may take to answer PING after it is spawned. Default 60 s. */
  startTimeoutMs?: number;
  /** Progress lines: our own, apt-get's and clamd's output. Default: dropped. */
  log?: (line: string) => void;
}

export interface ClamdHandle {
  host: string;
  port: number;
  /** False when a clamd already answered on host:port: stop() then leaves it alone. */
  startedByUs: boolean;
  /** The clamd process, when we started it. */
  pid: number | undefined;
  stop(): Promise<void>;
}

export type LocalClamdErrorCode = "CLAMD_NOT_INSTALLED" | "CLAMD_INSTALL_FAILED" | "CLAMD_START_FAILED";

export class LocalClamdError extends Error {
  constructor(
    readonly code: LocalClamdErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "LocalClamdError";
  }
}

const DEFAULT_PORT = 3310;
const DEFAULT_HOST = "127.0.0.1";
const INSTALL_LOCK = "/tmp/meter-clamav-install.lock";
/** clamd's database extensions; anything else in infra/clamav (README.md) is not copied. */
const SIGNATURE_FILE = /\.(hdb|hsb|hdu|hsu|mdb|msb|mdu|msu|ndb|ndu|ldb|ldu|cdb|ftm|fp|sfp|ign|ign2|pdb|gdb|wdb|yar|yara|cbc)$/;

/** Sends one clamd command (z-form: NUL-terminated) and returns the reply without its NUL. */
export function clamdCommand(host: string, port: number, command: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({ host, port });
    let reply = "";
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`clamd at ${host}:${port} did not answer ${command} within ${timeoutMs} ms`)));
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`z${command}\0`));
    socket.on("data", (chunk: string) => {
      reply += chunk;
      const end = reply.indexOf("\0");
      if (end >= 0) {
        socket.destroy();
        resolve(reply.slice(0, end));
      }
    });
    socket.on("end", () => resolve(reply.replace(/\0$/, "")));
    socket.on("error", fail);
  });
}

/** True only when a clamd answers PING with PONG on host:port. */
export async function pingClamd(host = DEFAULT_HOST, port = DEFAULT_PORT, timeoutMs = 1_000): Promise<boolean> {
  try {
    return (await clamdCommand(host, port, "PING", timeoutMs)) === "PONG";
  } catch {
    return false;
  }
}

/**
 * Asks whatever clamd listens on host:port to shut down, ours or not (e.g. one left behind by a
 * killed `npm start`), and waits until it no longer answers. Returns false when none answered.
 * To stop a clamd you started, prefer its handle's stop().
 */
export async function stopClamd(host = DEFAULT_HOST, port = DEFAULT_PORT, timeoutMs = 10_000): Promise<boolean> {
  if (!(await pingClamd(host, port))) return false;
  await clamdCommand(host, port, "SHUTDOWN").catch(() => "");
  const deadline = Date.now() + timeoutMs;
  while (await pingClamd(host, port)) {
    if (Date.now() > deadline) throw new Error(`clamd at ${host}:${port} still answers ${timeoutMs} ms after SHUTDOWN`);
    await sleep(100);
  }
  return true;
}

/** clamd is in /usr/sbin, which a non-root PATH often lacks. */
export function findClamd(): string | undefined {
  return findOnPath("clamd");
}

/**
 * Installs Debian's clamav-daemon (which brings clamav-freshclam; neither is started by apt).
 * Root runs apt-get directly, anyone else through passwordless sudo. `flock` serializes concurrent
 * installs (npm start and a test run on one machine), and the script re-checks for clamd once it
 * holds the lock, so the second caller does not install again.
 */
export async function installClamd(log: (line: string) => void = () => {}): Promise<void> {
  try {
    await aptInstall({
      packages: ["clamav-daemon"],
      alreadyThere: "[ -x /usr/sbin/clamd ] || command -v clamd >/dev/null 2>&1",
      lockFile: INSTALL_LOCK,
      log,
    });
  } catch (e) {
    if (!(e instanceof AptInstallError)) throw e;
    throw new LocalClamdError(e.reason === "not_permitted" ? "CLAMD_NOT_INSTALLED" : "CLAMD_INSTALL_FAILED", `clamd: ${e.message}`);
  }
}

async function copySignatures(from: string, to: string): Promise<string[]> {
  const names = (await readdir(from)).filter((name) => SIGNATURE_FILE.test(name));
  if (names.length === 0) {
    throw new LocalClamdError("CLAMD_START_FAILED", `no signature files in ${from}: clamd refuses to start with an empty database`);
  }
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { recursive: true });
  await Promise.all(names.map((name) => copyFile(path.join(from, name), path.join(to, name))));
  return names;
}

/** What the container's clamd.conf says about its own paths and address, which a local clamd sets itself. */
const PLACE_DIRECTIVES = new Set(["DatabaseDirectory", "TCPSocket", "TCPAddr", "TemporaryDirectory", "LocalSocket", "User"]);

/**
 * The container's configuration (its limits, image scanning, AlertExceedsMax) with our own paths, so
 * Debian's /etc/clamav/clamd.conf (User clamav, LocalSocket in /run/clamav) plays no part and no
 * clamav user or /run/clamav folder is needed: clamd runs as whoever starts it.
 */
function localClamdConfig(containerConfig: string, opts: { host: string; port: number; databaseDir: string; tempDir: string }): string {
  const kept = containerConfig.split("\n").filter((line) => !PLACE_DIRECTIVES.has(line.trim().split(/\s+/)[0] ?? ""));
  return [
    "# Written by @meter/local-infra on every start from infra/clamav/clamd.conf: edits here are overwritten.",
    `DatabaseDirectory ${opts.databaseDir}`,
    `TCPSocket ${opts.port}`,
    `TCPAddr ${opts.host}`,
    `TemporaryDirectory ${opts.tempDir}`,
    ...kept,
  ].join("\n");
}

/**
 * Returns a clamd answering on host:port: one that already answers PING, or one we start
 * (installing clamav-daemon first when clamd is missing). Only a clamd we started is stopped by
 * stop(); it does not keep this process's event loop alive, and is killed if this process exits
 * without calling stop().
 */
export async function ensureClamd(options: EnsureClamdOptions = {}): Promise<ClamdHandle> {
  // clamd cannot take any port and say which: it is given one, and started again on another if taken.
  if (options.port === 0) return withAssignedPorts(1, ([port]) => ensureClamd({ ...options, port: port! }), options.host ? { host: options.host } : {});
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_PORT;
  const log = options.log ?? (() => {});
  assertPort(port, "ensureClamd");
  if (await pingClamd(host, port)) {
    log(`reusing the clamd already answering on ${host}:${port}`);
    return { host, port, startedByUs: false, pid: undefined, stop: async () => {} };
  }

  let binary = findClamd();
  if (!binary) {
    if (options.install === false) throw new LocalClamdError("CLAMD_NOT_INSTALLED", "clamd is not installed (install: false)");
    await installClamd(log);
    binary = findClamd();
    if (!binary) throw new LocalClamdError("CLAMD_INSTALL_FAILED", "apt-get reported success but no clamd binary was found");
  }

  await assertPortFree(host, port);
  const dataDir = path.join(path.resolve(options.dataDir ?? localStateDir("clamd")), String(port));
  const databaseDir = path.join(dataDir, "db");
  const tempDir = path.join(dataDir, "tmp");
  await mkdir(tempDir, { recursive: true });
  const signatures = await copySignatures(options.signaturesDir ?? clamavSignaturesDir(), databaseDir);
  const configFile = path.join(dataDir, "clamd.conf");
  const containerConfig = await readFile(options.configFile ?? clamdConfigFile(), "utf8");
  await writeFile(configFile, localClamdConfig(containerConfig, { host, port, databaseDir, tempDir }));

  const started = Date.now();
  const child = spawn(binary, [`--config-file=${configFile}`], { stdio: ["ignore", "pipe", "pipe"] });
  const output = new OutputTail(log);
  output.attach(child.stdout);
  output.attach(child.stderr);
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  killOnParentExit(child);

  const answering = await waitUntilAnswering(child, host, port, options.startTimeoutMs ?? 60_000, output, spawnError);
  if (answering === "another") {
    log(`another clamd took ${host}:${port} while ours started: reusing it`);
    return { host, port, startedByUs: false, pid: undefined, stop: async () => {} };
  }
  log(`clamd answering on ${host}:${port} after ${Date.now() - started} ms (pid ${child.pid}, signatures: ${signatures.join(", ")})`);
  detachFromEventLoop(child);

  let stopping: Promise<void> | undefined;
  return {
    host,
    port,
    startedByUs: true,
    pid: child.pid,
    stop: () => (stopping ??= terminate(child)),
  };
}

/** Something that is not a (ready) clamd holds the port: say so instead of spawning into a bind error. */
async function assertPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new LocalClamdError("CLAMD_START_FAILED", `${host}:${port} is in use by something that does not answer clamd's PING (EADDRINUSE)`)
          : error,
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

async function waitUntilAnswering(
  child: ChildProcess,
  host: string,
  port: number,
  timeoutMs: number,
  output: OutputTail,
  spawnError: Promise<Error>,
): Promise<"ours" | "another"> {
  let failure: Error | undefined;
  void spawnError.then((error) => (failure = error));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (failure) throw new LocalClamdError("CLAMD_START_FAILED", `could not spawn clamd: ${failure.message}`);
    // The port was free before the spawn, so a PONG while our child lives comes from our child.
    if (!hasExited(child) && (await pingClamd(host, port, 500))) return "ours";
    if (hasExited(child)) {
      await exited(child);
      // Lost a race for the port to a concurrent start: that one serves as well as ours would.
      if (await pingClamd(host, port)) return "another";
      throw new LocalClamdError(
        "CLAMD_START_FAILED",
        `clamd exited (code ${child.exitCode}, signal ${child.signalCode}) before answering on ${host}:${port}:\n${output}`,
      );
    }
    if (Date.now() > deadline) {
      await terminate(child);
      throw new LocalClamdError("CLAMD_START_FAILED", `clamd did not answer PING on ${host}:${port} within ${timeoutMs} ms:\n${output}`);
    }
    await sleep(100);
  }
}
