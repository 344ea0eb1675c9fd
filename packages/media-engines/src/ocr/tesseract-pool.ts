import os from "node:os";
import { EngineAbortedError, EngineUnavailableError, throwIfAborted } from "../errors";
import { parseTesseractTsv, type Recognition } from "./tsv";
import { DEFAULT_WORKER_COMMAND, TesseractWorker, type PageImage, type WorkerCommand, type WorkerInfo } from "./tesseract-worker";

export type { PageImage } from "./tesseract-worker";

/**
 * Native Tesseract (Debian's `tesseract-ocr`, `-eng`, `-rus`), at most one process per core, each
 * single-threaded (`OMP_THREAD_LIMIT=1`: OpenMP threads inside one process only fight the other
 * processes for the same cores), each long-lived and reading one page at a time through Tesseract's C
 * API (tesseract-worker.ts, Debian's `python3-tesserocr`): pixels in, TSV out, no temporary files.
 *
 * Why long-lived: a `tesseract` run per page loads its models for every page, ~0.2 s of CPU with `eng`
 * (a dense A4 page is ~1-2 s), and that alone made the OCR corpus slower than plain Tesseract
 * (docs/benchmarks.md, issue 46); a worker keeps one TessBaseAPI per language setting and reads the
 * same pages to the same TSV as the CLI. A worker is started when a page needs one and none is idle,
 * and replaced when it dies, is killed by a page's timeout or abort, or answers out of turn.
 * warmUp() starts every worker and loads every language setting in each, so the first job does not
 * pay for it.
 */
export interface TesseractPoolOptions {
  /** Processes at once. Default: the number of cores. */
  size?: number;
  /** How a worker is started (tests start a stand-in). Default: `/usr/bin/python3 -c` with the worker's source. */
  worker?: WorkerCommand;
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
  private readonly command: WorkerCommand;
  private readonly pageTimeoutMs: number;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly idle: TesseractWorker[] = [];
  private readonly workers = new Set<TesseractWorker>();
  private closed = false;

  constructor(options: TesseractPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? os.availableParallelism());
    this.command = options.worker ?? DEFAULT_WORKER_COMMAND;
    this.pageTimeoutMs = options.pageTimeoutMs ?? 120_000;
  }

  /** Recognises one page. Waits for a free slot first. */
  async recognize(image: PageImage, options: RecognizeOptions): Promise<Recognition> {
    await this.acquire(options.signal);
    let worker: TesseractWorker | undefined;
    try {
      throwIfAborted(options.signal);
      worker = (await this.idleWorker()) ?? (await this.start()).worker;
      throwIfAborted(options.signal);
      // Tesseract ignores a resolution under 70 and estimates one from the text, as it does with none.
      const dpi = options.dpi !== undefined && options.dpi >= 70 ? Math.round(options.dpi) : 0;
      const tsv = await worker.recognize(image, { languages: options.languages, dpi, psm: options.psm ?? 3 }, this.pageTimeoutMs, options.signal);
      return parseTesseractTsv(tsv);
    } finally {
      if (worker) await this.putBack(worker);
      this.release();
    }
  }

  /** Version, languages and data folder of the installed Tesseract; EngineUnavailableError when it is missing. */
  async installation(): Promise<TesseractInstallation> {
    const { worker, info } = await this.start();
    await this.putBack(worker);
    return { version: info.version, languages: info.languages, tessdataDir: info.tessdata };
  }

  /**
   * Fails (EngineUnavailableError) unless every language in `languageSets` is installed, then starts
   * every worker and has each read a tiny blank page once per set, so each holds every model.
   */
  async warmUp(languageSets: readonly string[]): Promise<TesseractInstallation> {
    const installed = await this.installation();
    const needed = [...new Set(languageSets.flatMap((set) => set.split("+")))];
    const missing = needed.filter((lang) => !installed.languages.includes(lang));
    if (missing.length > 0) {
      throw new EngineUnavailableError(`Tesseract language data missing: ${missing.join(", ")} (install tesseract-ocr-${missing.join(" tesseract-ocr-")})`);
    }
    const blank: PageImage = { width: 64, height: 32, pixels: Buffer.alloc(64 * 32, 255), bilevel: false };
    await Promise.all(
      Array.from({ length: this.size }, async () => {
        for (const languages of languageSets) await this.recognize(blank, { languages, dpi: 300 });
      }),
    );
    return installed;
  }

  /** Kills every worker; later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    this.idle.length = 0;
    await Promise.all([...this.workers].map((worker) => this.retire(worker)));
  }

  private async start(): Promise<{ worker: TesseractWorker; info: WorkerInfo }> {
    if (this.closed) throw new EngineUnavailableError("the Tesseract pool is closed");
    const started = await TesseractWorker.start(this.command);
    this.workers.add(started.worker);
    return started;
  }

  /** An idle worker still alive; one that died while idle (killed from outside, out of memory) is let go. */
  private async idleWorker(): Promise<TesseractWorker | undefined> {
    for (let worker = this.idle.pop(); worker; worker = this.idle.pop()) {
      if (worker.usable) return worker;
      await this.retire(worker);
    }
    return undefined;
  }

  /** An idle worker is kept for the next page, at most one per slot; a dead or killed one is let go. */
  private async putBack(worker: TesseractWorker): Promise<void> {
    if (worker.usable && !this.closed && this.idle.length < this.size) this.idle.push(worker);
    else await this.retire(worker);
  }

  private async retire(worker: TesseractWorker): Promise<void> {
    this.workers.delete(worker);
    await worker.kill();
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
}
