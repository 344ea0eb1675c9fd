import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { EngineAbortedError, EngineUnavailableError, throwIfAborted } from "../errors";
import { parseTesseractTsv, type Recognition } from "./tsv";

/**
 * Native Tesseract (Debian's `tesseract-ocr`, `-eng`, `-rus`), one process per page, at most one process
 * per core, each single-threaded (`OMP_THREAD_LIMIT=1`: OpenMP threads inside one process only fight the
 * other processes for the same cores). The page goes in as binary PGM on stdin and TSV comes back on
 * stdout: no temporary files.
 *
 * Why a process per page and not a long-lived one (measured here: Tesseract 5.3.0 with Debian's 4.1.0
 * "fast" models in the page cache, 2 cores): a spawn that recognises a tiny image costs ~30 ms of CPU
 * with `rus` and ~100-150 ms with `eng` or `eng+rus` (mostly loading the model), while one dense A4 page
 * (40 lines, ~2600 characters), scaled to the size the recognizer reads at (text-size.ts), takes
 * ~1.4-1.8 s; start-up is 5-8 % of a page. `--psm 6`, `tessedit_do_invert=0` and dropping the
 * dictionaries change nothing measurable. Piping a PGM costs no more than piping a PNG or reading a file.
 * The CLI cannot take several images through one pipe (only a list of file names, i.e. temporary files),
 * so a long-lived process would need the C API through a native helper (python3-tesserocr measured
 * 0.1-0.15 s less per page): a build step and a second runtime in the image for under 8 %.
 * warmUp() checks the binary and the language data, reads the data files once
 * (so the first job does not wait for the disk) and runs one tiny recognition per language set.
 */
export interface TesseractPoolOptions {
  /** Processes at once. Default: the number of cores. */
  size?: number;
  /** Default `tesseract` (from PATH). */
  binary?: string;
  /** Kill a page that takes longer (a pathological image). Default 120 s. */
  pageTimeoutMs?: number;
}

export interface RecognizeOptions {
  /** Tesseract `-l` value: `eng`, `rus` or `eng+rus`. */
  languages: string;
  /** The raster's true resolution; undefined when it is not known, and Tesseract estimates it from the text size. */
  dpi: number | undefined;
  /** Tesseract's page segmentation mode: 3 (a page, the default) or 6 (one block of text). */
  psm?: 3 | 6;
  signal?: AbortSignal;
}

export interface TesseractInstallation {
  version: string;
  languages: string[];
  tessdataDir: string | undefined;
}

export class TesseractPool {
  readonly size: number;
  private readonly binary: string;
  private readonly pageTimeoutMs: number;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly children = new Set<ChildProcess>();
  private closed = false;

  constructor(options: TesseractPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? os.availableParallelism());
    this.binary = options.binary ?? "tesseract";
    this.pageTimeoutMs = options.pageTimeoutMs ?? 120_000;
  }

  /** Recognises one image (any format Leptonica reads; the engine sends 8-bit grey PGM). Waits for a free slot first. */
  async recognize(image: Buffer, options: RecognizeOptions): Promise<Recognition> {
    await this.acquire(options.signal);
    try {
      throwIfAborted(options.signal);
      // Tesseract ignores a resolution under 70 and estimates one from the text, as it does with none.
      const dpi = options.dpi !== undefined && options.dpi >= 70 ? ["--dpi", String(Math.round(options.dpi))] : [];
      const args = ["stdin", "stdout", "-l", options.languages, ...dpi, "--psm", String(options.psm ?? 3), "tsv"];
      const { stdout } = await this.exec(args, image, options.signal);
      return parseTesseractTsv(stdout);
    } finally {
      this.release();
    }
  }

  /** Version, languages and data folder of the installed Tesseract; EngineUnavailableError when it is missing. */
  async installation(): Promise<TesseractInstallation> {
    const version = (await this.exec(["--version"])).stdout.split("\n")[0]?.trim() ?? "";
    const { stdout } = await this.exec(["--list-langs"]);
    const [header = "", ...names] = stdout.split("\n");
    const tessdataDir = /"([^"]+)"/.exec(header)?.[1];
    return { version, languages: names.map((n) => n.trim()).filter(Boolean), tessdataDir };
  }

  /**
   * Fails (EngineUnavailableError) unless every language in `languageSets` is installed, then pulls
   * their data files into the page cache and recognises a tiny blank image once per set.
   */
  async warmUp(languageSets: readonly string[]): Promise<TesseractInstallation> {
    const installed = await this.installation();
    const needed = [...new Set(languageSets.flatMap((set) => set.split("+")))];
    const missing = needed.filter((lang) => !installed.languages.includes(lang));
    if (missing.length > 0) {
      throw new EngineUnavailableError(`Tesseract language data missing: ${missing.join(", ")} (install tesseract-ocr-${missing.join(" tesseract-ocr-")})`);
    }
    if (installed.tessdataDir) {
      const dir = installed.tessdataDir;
      await Promise.all(needed.map((lang) => readFile(path.join(dir, `${lang}.traineddata`)).catch(() => undefined)));
    }
    const blank = Buffer.concat([Buffer.from("P5\n64 32\n255\n"), Buffer.alloc(64 * 32, 255)]);
    for (const languages of languageSets) await this.recognize(blank, { languages, dpi: 300 });
    return installed;
  }

  /** Kills every running process; later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.children) child.kill("SIGKILL");
    await Promise.all([...this.children].map((child) => new Promise((resolve) => child.once("close", resolve))));
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    if (this.closed) return Promise.reject(new EngineUnavailableError("the Tesseract pool is closed"));
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        this.active++;
        resolve();
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(grant);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new EngineAbortedError({ cause: signal?.reason }));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.();
  }

  private exec(args: string[], input?: Buffer, signal?: AbortSignal): Promise<{ stdout: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.binary, args, {
        stdio: ["pipe", "pipe", "pipe"],
        env: { ...process.env, OMP_THREAD_LIMIT: "1" },
      });
      this.children.add(child);
      const out: Buffer[] = [];
      let err = "";
      let failure: Error | undefined;
      const fail = (error: Error) => {
        failure ??= error;
        child.kill("SIGKILL");
      };
      const timer = setTimeout(() => fail(new EngineUnavailableError(`Tesseract took longer than ${this.pageTimeoutMs} ms`)), this.pageTimeoutMs);
      const onAbort = () => fail(new EngineAbortedError({ cause: signal?.reason }));
      signal?.addEventListener("abort", onAbort, { once: true });
      child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk: string) => (err = (err + chunk).slice(-4096)));
      // A child that dies before reading all its input makes the write fail with EPIPE; its exit says why.
      child.stdin.on("error", () => undefined);
      child.on("error", (error: NodeJS.ErrnoException) =>
        fail(
          error.code === "ENOENT"
            ? new EngineUnavailableError(`Tesseract is not installed (${this.binary} not found): apt-get install tesseract-ocr`)
            : new EngineUnavailableError(`could not run Tesseract: ${error.message}`),
        ),
      );
      child.on("close", (code, killedBy) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.children.delete(child);
        if (failure) reject(failure);
        else if (code !== 0) reject(new EngineUnavailableError(`Tesseract exited with ${code ?? killedBy}: ${err.trim()}`));
        else resolve({ stdout: Buffer.concat(out).toString("utf8") });
      });
      child.stdin.end(input);
    });
  }
}
