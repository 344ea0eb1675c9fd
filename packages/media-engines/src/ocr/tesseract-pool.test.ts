import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { ensureTesseract } from "@meter/local-infra";
import { renderTextGrey } from "../../test/support/text-render";
import { EngineAbortedError, EngineUnavailableError } from "../errors";
import { TesseractPool, type PageImage } from "./tesseract-pool";
import { TesseractWorker } from "./tesseract-worker";
import { parseTesseractTsv } from "./tsv";

// Real Tesseract through its real worker (installed with apt when missing, as npm test does).
const SENTENCES = [
  "The quick brown fox jumps over the lazy dog.",
  "Pack my box with five dozen liquor jugs, said the clerk.",
  "How vexingly quick daft zebras jump at noon!",
  "Sphinx of black quartz, judge my vow.",
];
const lines = Array.from({ length: 12 }, (_, i) => `${SENTENCES[i % 4]} Then line ${i + 1} ends.`);
let page: PageImage;
/** 10 px text: told 1200 DPI, Tesseract takes its first line for specks; told nothing, it reads it. */
let small: PageImage;

async function rendered(fontSize: number, width: number): Promise<PageImage> {
  const grey = await renderTextGrey({ lines, width, fontSize });
  return { width: grey.width, height: grey.height, pixels: grey.data, bilevel: false };
}

beforeAll(async () => {
  await ensureTesseract();
  page = await rendered(28, 1400);
  small = await rendered(10, 600);
}, 600_000);

/** The pids of this process's children whose command line mentions tesserocr: the pool's workers. */
function workerPids(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
        return Number(stat[1]) === process.pid && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("tesserocr");
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** What `tesseract stdin stdout ... tsv` makes of the same grey pixels. */
function cliTsv(image: PageImage, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile("tesseract", ["stdin", "stdout", ...args, "tsv"], { env: { ...process.env, OMP_THREAD_LIMIT: "1" } }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
    child.stdin!.end(Buffer.concat([Buffer.from(`P5\n${image.width} ${image.height}\n255\n`), image.pixels]));
  });
}

describe("the Tesseract pool's long-lived workers", () => {
  test("read a page exactly as the tesseract CLI does, with and without a resolution, as a page and as one block", async () => {
    const pool = new TesseractPool({ size: 1 });
    try {
      const texts: string[] = [];
      for (const [dpi, psm] of [
        [1200, 3],
        [undefined, 3],
        [300, 6],
      ] as const) {
        const ours = await pool.recognize(small, { languages: "eng", dpi, psm });
        const cli = await cliTsv(small, ["-l", "eng", ...(dpi ? ["--dpi", String(dpi)] : []), "--psm", String(psm)]);
        // Same text, blocks, boxes and confidences: the worker adds nothing and loses nothing.
        expect(ours).toEqual(parseTesseractTsv(cli));
        texts.push(ours.text);
      }
      expect(texts[1]).toContain("Then line 12 ends.");
      // The resolution reaches Tesseract: at 1200 DPI 10 px letters are too small to be text.
      expect(texts[0]).not.toEqual(texts[1]);
    } finally {
      await pool.close();
    }
  }, 120_000);

  test("keep one process for page after page and language after language", async () => {
    const pool = new TesseractPool({ size: 1 });
    try {
      await pool.recognize(page, { languages: "eng", dpi: 300 });
      const [first] = workerPids();
      await pool.recognize(page, { languages: "rus", dpi: 300 });
      await pool.recognize(page, { languages: "eng+rus", dpi: 300 });
      expect(workerPids()).toEqual([first]);
    } finally {
      await pool.close();
    }
    expect(workerPids()).toEqual([]);
  }, 120_000);

  test("a worker that dies mid-page fails that page with model_unavailable, and a new one reads the next", async () => {
    const pool = new TesseractPool({ size: 1 });
    try {
      await pool.recognize(page, { languages: "eng", dpi: 300 });
      const [first] = workerPids();
      const reading = pool.recognize(page, { languages: "eng", dpi: 300 });
      setTimeout(() => process.kill(first!, "SIGKILL"), 50);
      await expect(reading).rejects.toThrow(EngineUnavailableError);
      await expect(reading).rejects.toThrow(/worker exited with SIGKILL/);
      const again = await pool.recognize(page, { languages: "eng", dpi: 300 });
      expect(again.text).toContain("Then line 1 ends.");
      expect(workerPids()).not.toContain(first);
    } finally {
      await pool.close();
    }
  }, 120_000);

  test("a worker that died while idle is replaced before the next page, which it does not fail", async () => {
    const pool = new TesseractPool({ size: 1 });
    try {
      await pool.recognize(page, { languages: "eng", dpi: 300 });
      const [first] = workerPids();
      process.kill(first!, "SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await pool.recognize(page, { languages: "eng", dpi: 300 })).text).toContain("Then line 4 ends.");
      expect(workerPids()).not.toContain(first);
    } finally {
      await pool.close();
    }
  }, 120_000);

  test("a page over the time limit is stopped with its worker; an aborted page too; the next page is read", async () => {
    const pool = new TesseractPool({ size: 1, pageTimeoutMs: 30 });
    try {
      await expect(pool.recognize(page, { languages: "eng", dpi: 300 })).rejects.toThrow(/took longer than 30 ms on a page/);
      expect(workerPids()).toEqual([]);
    } finally {
      await pool.close();
    }
    const patient = new TesseractPool({ size: 1 });
    try {
      await patient.recognize(page, { languages: "eng", dpi: 300 });
      const abort = new AbortController();
      const reading = patient.recognize(page, { languages: "eng", dpi: 300, signal: abort.signal });
      setTimeout(() => abort.abort(new Error("the job was cancelled")), 50);
      await expect(reading).rejects.toThrow(EngineAbortedError);
      expect(workerPids()).toEqual([]);
      expect((await patient.recognize(page, { languages: "eng", dpi: 300 })).text).toContain("Then line 2 ends.");
    } finally {
      await patient.close();
    }
  }, 120_000);

  test("a page Tesseract cannot read fails alone: the worker goes on with the next", async () => {
    const pool = new TesseractPool({ size: 1 });
    try {
      await pool.recognize(page, { languages: "eng", dpi: 300 });
      const [first] = workerPids();
      await expect(pool.recognize(page, { languages: "xx", dpi: 300 })).rejects.toThrow(/could not read the page/);
      expect((await pool.recognize(page, { languages: "eng", dpi: 300 })).text).toContain("Then line 3 ends.");
      expect(workerPids()).toEqual([first]);
    } finally {
      await pool.close();
    }
  }, 120_000);

  test("without the binding the pool says what to install, as model_unavailable", async () => {
    const missing = new TesseractPool({ size: 1, worker: { command: "/nonexistent/python3", args: [] } });
    await expect(missing.recognize(page, { languages: "eng", dpi: 300 })).rejects.toThrow(/python3-tesserocr/);
    const broken = new TesseractPool({ size: 1, worker: { command: "/usr/bin/python3", args: ["-c", "import tesserocr_missing"] } });
    await expect(broken.recognize(page, { languages: "eng", dpi: 300 })).rejects.toThrow(EngineUnavailableError);
    await Promise.all([missing.close(), broken.close()]);
  }, 60_000);

  test("a worker that never says it is ready, or answers what nobody asked, is killed and fails no later page", async () => {
    const silent = { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"] };
    await expect(TesseractWorker.start(silent, 300)).rejects.toThrow(/took longer than 300 ms to start/);
    const chatty = {
      command: process.execPath,
      args: ["-e", `process.stdout.write(JSON.stringify({ version: "x", languages: [], tessdata: "" }) + "\\n{}\\n"); setInterval(() => {}, 1000)`],
    };
    const { worker } = await TesseractWorker.start(chatty);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(worker.usable).toBe(false);
    await expect(worker.recognize(page, { languages: "eng", dpi: 0, psm: 3 }, 1_000)).rejects.toThrow(/an answer nobody asked for/);
    await worker.kill();
  }, 60_000);
});
