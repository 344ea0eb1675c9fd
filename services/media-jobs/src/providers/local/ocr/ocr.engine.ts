import sharp from "sharp";
import { LimitExceededError, throwIfAborted } from "../../errors";
import type { EngineResult, InputFile, RunOptions, OcrEngine, OcrPage, OcrRequest, OcrResultDocument, OcrSettings, Quantity } from "../../provider";
import { IMAGE_MIME_TYPES, PDF_MIME_TYPE, assertAccepted, assertFileCount, decoding, imageHeader, isPdf, sharpInput } from "../input";
import { PdfDocument, countPdfPages } from "./pdf-document";
import { TesseractPool } from "./tesseract-pool";
import { estimateTextLineHeight, ocrScale } from "./text-size";
import { jsonResult } from "../json-result";

export const OCR_ACCEPTED_TYPES: readonly string[] = [...IMAGE_MIME_TYPES, PDF_MIME_TYPE];

export interface LocalOcrLimits {
  maxFiles: number;
  maxPagesPerDocument: number;
}

export interface LocalOcrEngineOptions {
  limits: LocalOcrLimits;
  /** Shared by every OCR job of the process; default: one process per core. */
  pool?: TesseractPool;
  /** Resolution PDF pages without a text layer are rendered at. Default 300. */
  dpi?: number;
  /** Largest raster a PDF page is rendered to (lower DPI for huge pages). Default 36 MP (A3 at 300 DPI is 17 MP). */
  maxRenderPixels?: number;
}

const TESSERACT_LANGUAGES: Record<NonNullable<OcrSettings["language"]>, string> = {
  auto: "eng+rus",
  en: "eng",
  eng: "eng",
  ru: "rus",
  rus: "rus",
};

/** Tesseract refuses an image with a side longer than this ("Image too large"); longer pages are scaled to fit. */
const TESSERACT_MAX_SIDE_PX = 32_767;

interface PageJob {
  fileIndex: number;
  page: number;
  file: InputFile;
  pdf?: PdfDocument;
}

/**
 * OCR of images and PDFs. A PDF page with its own text layer is read from it (no recognition, no cost in
 * time); a page without one (a scan) is rendered and recognised. Every recognised image goes through a 3x3
 * median filter first: it removes scanner speckle, which otherwise costs Tesseract whole words.
 */
export function createLocalOcrEngine(options: LocalOcrEngineOptions): OcrEngine {
  const pool = options.pool ?? new TesseractPool();
  const dpi = options.dpi ?? 300;
  const maxRenderPixels = options.maxRenderPixels ?? 36_000_000;
  const { limits } = options;

  async function measure(request: OcrRequest): Promise<Quantity> {
    assertFileCount(request.files, limits.maxFiles);
    let quantity = 0;
    for (const [index, file] of request.files.entries()) {
      assertAccepted(file, OCR_ACCEPTED_TYPES, index);
      if (isPdf(file)) quantity += checkPages(await countPdfPages(file.data, index), index);
      else {
        await imageHeader(file, index);
        quantity += 1;
      }
    }
    return { unit: "page", quantity };
  }

  function checkPages(pages: number, fileIndex: number): number {
    if (pages > limits.maxPagesPerDocument) {
      throw new LimitExceededError(
        "pages",
        limits.maxPagesPerDocument,
        pages,
        `file ${fileIndex} has ${pages} pages; this model reads at most ${limits.maxPagesPerDocument} per document`,
      );
    }
    return pages;
  }

  /**
   * Greyscale, white under any transparency, scaled down to the text size Tesseract reads at (see
   * text-size.ts) and to Tesseract's largest side, 3x3 median, as binary PGM (P5) for Tesseract's stdin,
   * with the resolution that scaling leaves. The median runs after the scaling: on a quarter of the
   * pixels it costs a quarter.
   */
  async function toPgm(image: sharp.Sharp, fileIndex: number, dpi: number): Promise<{ pgm: Buffer; width: number; height: number; dpi: number }> {
    const { data, info } = await decoding(fileIndex, () => image.flatten({ background: "#ffffff" }).greyscale().raw().toBuffer({ resolveWithObject: true }));
    const { width, height } = info;
    const grey = info.channels === 1 ? data : await sharp(data, { raw: info }).extractChannel(0).raw().toBuffer();
    const scale = Math.min(ocrScale(estimateTextLineHeight(grey, width, height)), TESSERACT_MAX_SIDE_PX / Math.max(width, height));
    const size = { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
    let filter = sharp(grey, { raw: { width, height, channels: 1 } });
    if (scale < 1) filter = filter.resize({ ...size, fit: "fill" });
    // libvips refuses a 3x3 window on an image narrower or shorter than 3 px (a 1x1 PNG is still a page).
    if (size.width >= 3 && size.height >= 3) filter = filter.median(3);
    const filtered = await decoding(fileIndex, () => filter.extractChannel(0).raw().toBuffer());
    const pgm = Buffer.concat([Buffer.from(`P5\n${size.width} ${size.height}\n255\n`), filtered]);
    return { pgm, width, height, dpi: dpi * scale };
  }

  async function recognizePage(job: PageJob, languages: string, signal?: AbortSignal): Promise<OcrPage> {
    const base = { file_index: job.fileIndex, page: job.page };
    if (job.pdf) {
      const text = await job.pdf.pageText(job.page);
      if (/\S/.test(text)) {
        return { ...base, source: "text_layer", text, confidence: null, language: scriptLanguage(text), width_px: null, height_px: null };
      }
      const raster = await job.pdf.render(job.page, dpi, maxRenderPixels, signal);
      const page = await toPgm(sharp(raster.data, { raw: { width: raster.width, height: raster.height, channels: 4 } }), job.fileIndex, raster.dpi);
      const result = await pool.recognize(page.pgm, { languages, dpi: page.dpi, signal });
      return { ...base, source: "ocr", ...recognised(result), width_px: page.width, height_px: page.height };
    }
    const density = (await decoding(job.fileIndex, () => sharp(job.file.data, sharpInput()).metadata())).density;
    const page = await toPgm(sharp(job.file.data, sharpInput()).autoOrient(), job.fileIndex, plausibleDpi(density));
    const result = await pool.recognize(page.pgm, { languages, dpi: page.dpi, signal });
    return { ...base, source: "ocr", ...recognised(result), width_px: page.width, height_px: page.height };
  }

  async function run(request: OcrRequest, runOptions: RunOptions = {}): Promise<EngineResult> {
    const { signal, onProgress } = runOptions;
    assertFileCount(request.files, limits.maxFiles);
    const languages = TESSERACT_LANGUAGES[request.settings.language ?? "auto"];
    const opened: PdfDocument[] = [];
    try {
      const jobs: PageJob[] = [];
      for (const [fileIndex, file] of request.files.entries()) {
        assertAccepted(file, OCR_ACCEPTED_TYPES, fileIndex);
        throwIfAborted(signal);
        if (isPdf(file)) {
          const pdf = await PdfDocument.open(file.data, fileIndex);
          opened.push(pdf);
          const pages = checkPages(pdf.pageCount, fileIndex);
          for (let page = 1; page <= pages; page++) jobs.push({ fileIndex, page, file, pdf });
        } else {
          jobs.push({ fileIndex, page: 1, file });
        }
      }

      // As many pages in flight as Tesseract processes, so rendering the next page overlaps recognising
      // this one while memory stays bounded (~55 MB per page at 300 DPI A4: RGBA raster, grey copy, PGM).
      // The first failure stops the other lanes (their Tesseract processes are killed) before the PDFs close.
      const pages: OcrPage[] = new Array<OcrPage>(jobs.length);
      const stop = new AbortController();
      const forward = () => stop.abort(signal?.reason);
      signal?.addEventListener("abort", forward, { once: true });
      if (signal?.aborted) forward();
      let failure: unknown;
      let next = 0;
      let done = 0;
      onProgress?.({ done, total: jobs.length, unit: "page" });
      const lane = async () => {
        while (next < jobs.length && failure === undefined) {
          const index = next++;
          try {
            throwIfAborted(stop.signal);
            pages[index] = await recognizePage(jobs[index]!, languages, stop.signal);
          } catch (error) {
            failure ??= error;
            stop.abort(error);
            return;
          }
          onProgress?.({ done: ++done, total: jobs.length, unit: "page" });
        }
      };
      await Promise.all(Array.from({ length: Math.min(pool.size, jobs.length) }, lane));
      signal?.removeEventListener("abort", forward);
      if (failure !== undefined) throw failure;

      const document = resultDocument(pages, languages);
      return jsonResult("page", pages.length, document, "ocr.json");
    } finally {
      await Promise.all(opened.map((pdf) => pdf.destroy().catch(() => undefined)));
    }
  }

  return {
    operation: "ocr",
    unit: "page",
    measure,
    run,
    warmUp: async () => {
      await pool.warmUp(["eng", "rus", "eng+rus"]);
      // Loads pdf.js (and its fake worker) once, instead of during the first job's measure.
      await countPdfPages(minimalPdf()).catch(() => undefined);
    },
    close: () => pool.close(),
  };
}

function recognised(result: { text: string; confidence: number | null }): Pick<OcrPage, "text" | "confidence" | "language"> {
  return { text: result.text, confidence: result.confidence, language: scriptLanguage(result.text) };
}

/** Tesseract wants the real resolution; photos and screenshots often say 72 or nothing. */
function plausibleDpi(density: number | undefined): number {
  return density !== undefined && density >= 150 && density <= 1200 ? density : 300;
}

/** Which of our two languages the text is in, by its letters' script (Tesseract reports no language). */
export function scriptLanguage(text: string): "en" | "ru" | "und" {
  const cyrillic = text.match(/\p{Script=Cyrillic}/gu)?.length ?? 0;
  const latin = text.match(/\p{Script=Latin}/gu)?.length ?? 0;
  if (cyrillic === 0 && latin === 0) return "und";
  return cyrillic > latin ? "ru" : "en";
}

function resultDocument(pages: OcrPage[], languages: string): OcrResultDocument {
  const recognisedPages = pages.filter((p) => p.source === "ocr");
  const confidences = recognisedPages.map((p) => p.confidence).filter((c): c is number => c !== null);
  const text = pages.map((p) => p.text).join("\f");
  return {
    object: "ocr_result",
    ocr_languages: languages,
    language: scriptLanguage(text),
    page_count: pages.length,
    ocr_page_count: recognisedPages.length,
    text_layer_page_count: pages.length - recognisedPages.length,
    mean_confidence: confidences.length > 0 ? Math.round((confidences.reduce((a, b) => a + b, 0) / confidences.length) * 100) / 100 : null,
    pages,
    text,
  };
}

/** A one-page PDF with no content, to load pdf.js at warm-up. */
function minimalPdf(): Buffer {
  const objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>", "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>"];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}
