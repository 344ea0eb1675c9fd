/**
 * The OCR corpus part of `pnpm bench:media`: every document of bench/media/ocr-corpus (real test images
 * and scans, renders of a real PDF page at 96/150/300 DPI, Russian pages rendered, photographed-like,
 * speckled and as scanned PDFs of a grey JPEG, two-column magazine pages round a photo as bilevel scans
 * and in a two-page PDF, a photo with its caption, a chart with its labels, a phone photo of a letterhead;
 * see its README) read by the service's OCR engine and by plain `tesseract -l eng|rus` on the same file
 * (for a PDF, the images it holds), side by side, one after the other, both single-threaded
 * (OMP_THREAD_LIMIT=1, one Tesseract process at a time). CER against the ground truth. Time is CPU time
 * per document (this process and its Tesseract workers, for the service; the child, for the CLI), so
 * the pages/s ratio compares the work each side does on the same pages even on a shared machine; wall
 * clock is printed beside it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { TesseractPool, createLocalOcrEngine, type OcrResultDocument } from "@meter/media-engines";
import { cpuSeconds } from "./engines";
import { characterErrorRate } from "@meter/media-engines/test/support/cer";
import { loadOcrCorpus } from "@meter/media-engines/test/support/ocr-corpus";
import { plainTesseract } from "@meter/media-engines/test/support/plain-tesseract";

export interface CorpusRow {
  name: string;
  kind: string;
  language: "en" | "ru";
  pages: number;
  plainCer: number;
  serviceCer: number;
  /** The service with language auto (one script per block). */
  autoCer: number;
  /** CPU seconds. */
  plainSeconds: number;
  serviceSeconds: number;
  plainWall: number;
  serviceWall: number;
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; wall: number }> {
  const cpu = cpuSeconds();
  const start = process.hrtime.bigint();
  const value = await work();
  return { value, seconds: cpuSeconds() - cpu, wall: Number(process.hrtime.bigint() - start) / 1e9 };
}

export async function runOcrCorpusBenchmark(log: (line: string) => void = console.error): Promise<CorpusRow[]> {
  const docs = await loadOcrCorpus();
  const engine = createLocalOcrEngine({ limits: { maxFiles: 1, maxPagesPerDocument: 10 }, pool: new TesseractPool({ size: 1 }) });
  const dir = await mkdtemp(path.join(os.tmpdir(), "ocr-corpus-"));
  try {
    await engine.warmUp();
    const rows: CorpusRow[] = [];
    for (const [i, doc] of docs.entries()) {
      const service = (language: "en" | "ru" | "auto") =>
        timed(async () => {
          const result = await engine.run({ files: [{ data: doc.data, mimeType: doc.mimeType }], settings: { language } });
          return (JSON.parse(result.data.toString("utf8")) as OcrResultDocument).pages.map((p) => p.text).join("\n");
        });
      const plain = await timed(() => plainTesseract(doc, dir, String(i)));
      const ours = await service(doc.language);
      const auto = await service("auto");
      const row: CorpusRow = {
        name: doc.name,
        kind: doc.kind,
        language: doc.language,
        pages: doc.pages,
        plainCer: characterErrorRate(plain.value, doc.expected),
        serviceCer: characterErrorRate(ours.value, doc.expected),
        autoCer: characterErrorRate(auto.value, doc.expected),
        plainSeconds: plain.seconds,
        serviceSeconds: ours.seconds,
        plainWall: plain.wall,
        serviceWall: ours.wall,
      };
      log(
        `${row.name}: plain ${pct(row.plainCer)}, service ${pct(row.serviceCer)}, auto ${pct(row.autoCer)}; CPU ${row.plainSeconds.toFixed(2)} s / ${row.serviceSeconds.toFixed(2)} s`,
      );
      rows.push(row);
    }
    return rows;
  } finally {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const pct = (cer: number) => `${(cer * 100).toFixed(2)} %`;

export function printCorpusTable(rows: CorpusRow[]): void {
  console.log(
    "\n| document | kind | language | plain tesseract CER | service CER | service CER, language auto | service - plain (pp) | plain CPU s (wall) | service CPU s (wall) |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    const delta = (r.serviceCer - r.plainCer) * 100;
    console.log(
      `| ${r.name} | ${r.kind} | ${r.language} | ${pct(r.plainCer)} | ${pct(r.serviceCer)} | ${pct(r.autoCer)} | ${delta >= 0 ? "+" : ""}${delta.toFixed(2)} | ${r.plainSeconds.toFixed(2)} (${r.plainWall.toFixed(2)}) | ${r.serviceSeconds.toFixed(2)} (${r.serviceWall.toFixed(2)}) |`,
    );
  }
  const kinds = [...new Set(rows.map((r) => r.kind))];
  console.log("\n| kind | documents | plain tesseract mean CER | service mean CER | service mean CER, auto |");
  console.log("|---|---|---|---|---|");
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const kind of [...kinds, "all"]) {
    const of = rows.filter((r) => kind === "all" || r.kind === kind);
    console.log(
      `| ${kind} | ${of.length} | ${pct(mean(of.map((r) => r.plainCer)))} | ${pct(mean(of.map((r) => r.serviceCer)))} | ${pct(mean(of.map((r) => r.autoCer)))} |`,
    );
  }
  const pages = rows.reduce((n, r) => n + r.pages, 0);
  const plainRate = pages / rows.reduce((n, r) => n + r.plainSeconds, 0);
  const serviceRate = pages / rows.reduce((n, r) => n + r.serviceSeconds, 0);
  const plainWallRate = pages / rows.reduce((n, r) => n + r.plainWall, 0);
  const serviceWallRate = pages / rows.reduce((n, r) => n + r.serviceWall, 0);
  const worst = Math.max(...rows.map((r) => r.serviceCer - r.plainCer)) * 100;
  const worstAuto = Math.max(...rows.map((r) => r.autoCer - r.plainCer)) * 100;
  const signed = (pp: number) => `${pp >= 0 ? "+" : ""}${pp.toFixed(2)}`;
  console.log(
    `\n${pages} pages, one CPU: plain tesseract ${plainRate.toFixed(2)} pages/s, service ${serviceRate.toFixed(2)} pages/s (${(serviceRate / plainRate).toFixed(2)}x, target >= 1x: within plain Tesseract's time); ` +
      `wall clock ${plainWallRate.toFixed(2)} and ${serviceWallRate.toFixed(2)} pages/s (${(serviceWallRate / plainWallRate).toFixed(2)}x); ` +
      `worst document ${signed(worst)} pp against plain, ${signed(worstAuto)} pp with language auto (target <= +1 pp)\n`,
  );
}
