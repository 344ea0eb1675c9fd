/**
 * Native Tesseract for the media-jobs OCR engine, installed from Debian like clamd: `npm start` and
 * `npm test` call ensureTesseract() so a fresh machine gets `tesseract-ocr` with English and Russian
 * data, and `python3-tesserocr`, the binding the engine's long-lived Tesseract workers run on.
 */
import { aptInstall, AptInstallError, findOnPath, runCommand } from "./apt";

/** The Debian packages that bring the binary and the language data the OCR engine uses. */
export const TESSERACT_PACKAGES = ["tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-rus", "python3-tesserocr"] as const;
/** Languages the OCR engine needs (`tesseract --list-langs` names). */
export const TESSERACT_LANGUAGES = ["eng", "rus"] as const;

const INSTALL_LOCK = "/tmp/meter-tesseract-install.lock";

/** The Python the OCR engine starts its workers with (Debian's, where `python3-tesserocr` installs). */
const WORKER_PYTHON = "/usr/bin/python3";

export interface EnsureTesseractOptions {
  /** Install the Debian packages with apt-get when something is missing. Default true. */
  install?: boolean;
  /** Progress lines: our own and apt-get's output. Default: dropped. */
  log?: (line: string) => void;
}

export interface TesseractInfo {
  /** The binary found on PATH. */
  binary: string;
  /** First line of `tesseract --version`, e.g. `tesseract 5.3.0`. */
  version: string;
  /** Every language `tesseract --list-langs` reports (includes at least eng and rus). */
  languages: string[];
  /** Whether Debian's Python imports tesserocr (the OCR engine's workers need it). */
  binding: boolean;
  /** True when this call ran apt-get. */
  installedNow: boolean;
}

export type LocalTesseractErrorCode = "TESSERACT_NOT_INSTALLED" | "TESSERACT_INSTALL_FAILED";

export class LocalTesseractError extends Error {
  constructor(
    readonly code: LocalTesseractErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "LocalTesseractError";
  }
}
/**
 * What the installed Tesseract offers, or undefined when the binary is missing. `--list-langs`
 * prints a header line (`List of available languages in "...": `) and then one name per line.
 */
export async function probeTesseract(): Promise<Omit<TesseractInfo, "installedNow"> | undefined> {
  const binary = findOnPath("tesseract");
  if (!binary) return undefined;
  const version = await runCommand(binary, ["--version"]);
  if (version.code !== 0) return undefined;
  const langs = await runCommand(binary, ["--list-langs"]);
  const languages =
    langs.code === 0
      ? langs.output
          .split("\n")
          .slice(1)
          .map((line) => line.trim())
          .filter(Boolean)
      : [];
  const binding = await runCommand(WORKER_PYTHON, ["-c", "import tesserocr"]).then(
    (result) => result.code === 0,
    () => false,
  );
  return { binary, version: version.output.split("\n")[0]?.trim() ?? "tesseract", languages, binding };
}

/** What the engine needs and the probe did not find: language data, the binding. */
function missing(found: Omit<TesseractInfo, "installedNow">): string[] {
  const languages = TESSERACT_LANGUAGES.filter((lang) => !found.languages.includes(lang)).map((lang) => `language data ${lang}`);
  return found.binding ? languages : [...languages, "python3-tesserocr"];
}

/**
 * Installs the Debian packages. Root runs apt-get directly, anyone else through passwordless sudo;
 * `flock` serializes concurrent installs (npm start and a test run on one machine), and the script
 * re-checks once it holds the lock so a second caller does not install again.
 */
export async function installTesseract(log: (line: string) => void = () => {}): Promise<void> {
  try {
    await aptInstall({
      packages: TESSERACT_PACKAGES,
      alreadyThere: `tesseract --list-langs 2>/dev/null | grep -qx eng && tesseract --list-langs 2>/dev/null | grep -qx rus && ${WORKER_PYTHON} -c "import tesserocr" 2>/dev/null`,
      lockFile: INSTALL_LOCK,
      log,
    });
  } catch (e) {
    if (!(e instanceof AptInstallError)) throw e;
    throw new LocalTesseractError(e.reason === "not_permitted" ? "TESSERACT_NOT_INSTALLED" : "TESSERACT_INSTALL_FAILED", `Tesseract: ${e.message}`);
  }
}

/**
 * Makes sure `tesseract` is on PATH with the eng and rus language data and Debian's Python imports
 * tesserocr, installing the Debian packages when anything is missing (unless `install: false`). Cheap
 * when all is there (two short `tesseract` runs and one Python import), so it can be called on every start.
 */
export async function ensureTesseract(options: EnsureTesseractOptions = {}): Promise<TesseractInfo> {
  const log = options.log ?? (() => {});
  const before = await probeTesseract();
  if (before && missing(before).length === 0) return { ...before, installedNow: false };
  const what = before ? missing(before).join(", ") : "the tesseract binary";
  if (options.install === false) throw new LocalTesseractError("TESSERACT_NOT_INSTALLED", `Tesseract: ${what} missing (install: false)`);
  log(`Tesseract: ${what} missing`);
  await installTesseract(log);
  const after = await probeTesseract();
  if (!after) throw new LocalTesseractError("TESSERACT_INSTALL_FAILED", "apt-get reported success but no tesseract binary was found");
  const stillMissing = missing(after);
  if (stillMissing.length > 0) {
    throw new LocalTesseractError("TESSERACT_INSTALL_FAILED", `apt-get reported success but these are missing: ${stillMissing.join(", ")}`);
  }
  return { ...after, installedNow: true };
}
