import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { EngineAbortedError, EngineUnavailableError } from "../errors";
import { TESSERACT_WORKER_SOURCE } from "./tesseract-worker-source";

/** A page as Tesseract reads it. */
export interface PageImage {
  width: number;
  height: number;
  /**
   * 8-bit grey rows; or, when `bilevel`, one bit per pixel in rows padded to a byte, a set bit white
   * (Tesseract's packing for a binary image: it then skips its own thresholding).
   */
  pixels: Buffer;
  bilevel: boolean;
}

export interface PageRequest {
  /** Tesseract's language setting: `eng`, `rus` or `eng+rus`. */
  languages: string;
  /** The raster's resolution, or 0 when it is not known (Tesseract then estimates it). */
  dpi: number;
  psm: 3 | 6;
}

export interface WorkerInfo {
  version: string;
  languages: string[];
  tessdata: string;
}

/** How a worker is started: the program and its arguments. Default: Debian's Python with the worker's source. */
export interface WorkerCommand {
  command: string;
  args: string[];
}

export const DEFAULT_WORKER_COMMAND: WorkerCommand = { command: "/usr/bin/python3", args: ["-c", TESSERACT_WORKER_SOURCE] };

const INSTALL_HINT = "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-rus python3-tesserocr";

interface Answer {
  header: { bytes?: number; error?: string };
  body: Buffer;
}

/**
 * One long-lived Tesseract process (tesseract-worker-source.ts), reading one page at a time. A page
 * that takes too long or is aborted kills it (Tesseract cannot be interrupted mid-page), and so does
 * anything it answers out of turn; `usable` then says to start another. A page Tesseract refuses is
 * an error for that page alone and the worker goes on.
 */
export class TesseractWorker {
  private readonly child: ChildProcessWithoutNullStreams;
  private buffered: Buffer = Buffer.alloc(0);
  private header: Answer["header"] | undefined;
  private waiting: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | undefined;
  private stderr = "";
  private exited: Error | undefined;
  private readonly closed: Promise<void>;

  private constructor(command: WorkerCommand) {
    this.child = spawn(command.command, command.args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, OMP_THREAD_LIMIT: "1" } });
    this.child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-4096)));
    // A worker that dies before reading its whole request makes the write fail with EPIPE; its exit says why.
    this.child.stdin.on("error", () => undefined);
    this.closed = new Promise((resolve) => {
      this.child.on("error", (error: NodeJS.ErrnoException) =>
        this.fail(
          new EngineUnavailableError(
            error.code === "ENOENT"
              ? `Tesseract's worker cannot start: ${command.command} not found (${INSTALL_HINT})`
              : `Tesseract's worker cannot start: ${error.message}`,
          ),
        ),
      );
      this.child.on("close", (code, signal) => {
        const why = this.stderr.trim().split("\n").slice(-3).join(" ");
        const missing = /No module named .?tesserocr/.test(this.stderr) ? ` (${INSTALL_HINT})` : "";
        this.fail(new EngineUnavailableError(`Tesseract's worker exited with ${code ?? signal}${why ? `: ${why}` : ""}${missing}`));
        resolve();
      });
    });
  }

  /** Starts a worker and waits for its first line (version and languages); EngineUnavailableError when it cannot run. */
  static async start(command: WorkerCommand = DEFAULT_WORKER_COMMAND, timeoutMs = 30_000): Promise<{ worker: TesseractWorker; info: WorkerInfo }> {
    const worker = new TesseractWorker(command);
    try {
      const { header } = await worker.answer(timeoutMs, undefined, "to start");
      return { worker, info: header as unknown as WorkerInfo };
    } catch (error) {
      await worker.kill();
      throw error;
    }
  }

  /** False once the process is gone or was killed: the pool starts another. */
  get usable(): boolean {
    return this.exited === undefined;
  }

  /** Reads one page; the TSV rows Tesseract found. */
  async recognize(image: PageImage, request: PageRequest, timeoutMs: number, signal?: AbortSignal): Promise<string> {
    if (this.exited) throw this.exited;
    const header = { ...request, width: image.width, height: image.height, bilevel: image.bilevel, bytes: image.pixels.length };
    const answered = this.answer(timeoutMs, signal, "on a page");
    this.child.stdin.write(JSON.stringify(header) + "\n");
    this.child.stdin.write(image.pixels);
    const { header: reply, body } = await answered;
    if (reply.error !== undefined) throw new EngineUnavailableError(`Tesseract could not read the page: ${reply.error}`);
    return body.toString("utf8");
  }

  /** Kills the process and waits for it to be gone. */
  async kill(): Promise<void> {
    this.fail(new EngineUnavailableError("Tesseract's worker was stopped"));
    this.child.kill("SIGKILL");
    await this.closed;
  }

  private answer(timeoutMs: number, signal: AbortSignal | undefined, what: string): Promise<Answer> {
    if (this.exited) return Promise.reject(this.exited);
    if (this.waiting) return Promise.reject(new Error("a Tesseract worker reads one page at a time"));
    return new Promise<Answer>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiting = undefined;
      };
      const stop = (error: Error) => {
        this.fail(error);
        this.child.kill("SIGKILL");
      };
      const timer = setTimeout(() => stop(new EngineUnavailableError(`Tesseract took longer than ${timeoutMs} ms ${what}`)), timeoutMs);
      const onAbort = () => stop(new EngineAbortedError({ cause: signal?.reason }));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting = {
        resolve: (answer) => {
          done();
          resolve(answer);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      if (signal?.aborted) onAbort();
    });
  }

  /** The first failure is the one every later call sees. */
  private fail(error: Error): void {
    this.exited ??= error;
    this.waiting?.reject(this.exited);
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    for (;;) {
      if (!this.header) {
        const end = this.buffered.indexOf(0x0a);
        if (end < 0) return;
        try {
          this.header = JSON.parse(this.buffered.subarray(0, end).toString("utf8")) as Answer["header"];
        } catch {
          return this.outOfTurn("a line that is not JSON");
        }
        this.buffered = this.buffered.subarray(end + 1);
      }
      const size = this.header.bytes ?? 0;
      if (this.buffered.length < size) return;
      const answer = { header: this.header, body: this.buffered.subarray(0, size) };
      this.buffered = this.buffered.subarray(size);
      this.header = undefined;
      if (!this.waiting) return this.outOfTurn("an answer nobody asked for");
      this.waiting.resolve(answer);
    }
  }

  private outOfTurn(what: string): void {
    this.fail(new EngineUnavailableError(`Tesseract's worker wrote ${what}`));
    this.child.kill("SIGKILL");
  }
}
