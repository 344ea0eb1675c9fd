import sharp from "sharp";
import { LimitExceededError, throwIfAborted } from "../errors";
import type { EngineResult, InputFile, RunOptions, OcrEngine, OcrPage, OcrRequest, OcrResultDocument, OcrSettings, Quantity } from "../provider";
import { IMAGE_MIME_TYPES, PDF_MIME_TYPE, assertAccepted, assertFileCount, decoding, imageHeader, isPdf, sharpInput } from "../input";
import { PdfDocument, countPdfPages } from "./pdf-document";
import { dominantLanguage, hasLookAlikeWords, unifyWordScripts, type ScriptLanguage } from "./script";
import { removeRules } from "./rules";
import { isNoisy } from "./speckle";
import { TesseractPool, type PageImage } from "./tesseract-pool";
import { estimateTextLineHeight, ocrScale } from "./text-size";
import { combineBlocks, type RecognisedBlock, type Recognition } from "./tsv";
import { jsonResult } from "../json-result";

const TIFF_MIME_TYPE = "image/tiff";

export const OCR_ACCEPTED_TYPES: readonly string[] = [...IMAGE_MIME_TYPES, PDF_MIME_TYPE];

export interface LocalOcrLimits {
  maxFiles: number;
  maxPagesPerDocument: number;
}

export interface LocalOcrEngineOptions {
  limits: LocalOcrLimits;
  /** Shared by every OCR job of the process; default: one process per core. */
  pool?: TesseractPool;
  /**
   * Resolution PDF pages without a text layer and without images are rendered at. Default 300. A page
   * that is one image is read from it; one with images, at its largest image's resolution (within bounds).
   */
  dpi?: number;
  /** Largest raster a PDF page is rendered to (lower DPI for huge pages). Default 36 MP (A3 at 300 DPI is 17 MP). */
  maxRenderPixels?: number;
}

const AUTO_LANGUAGES = "eng+rus";

/** `auto` is read with both models first, then each block again with its own script's (settleScripts). */
const TESSERACT_LANGUAGES: Record<NonNullable<OcrSettings["language"]>, string> = {
  auto: AUTO_LANGUAGES,
  en: "eng",
  eng: "eng",
  ru: "rus",
  rus: "rus",
};

/** Blocks of a page read again with their own language at most; the rest are settled letter by letter. */
const MAX_BLOCK_REREADS = 8;
/** White margin around a block read again alone (px of the prepared page). */
const BLOCK_MARGIN_PX = 8;
/** Pixels kept round each of its lines' boxes (px of the prepared page): a box is the ink Tesseract thresholded. */
const LINE_MARGIN_PX = 2;

/** Bounds of the resolution a PDF page mixing images and other drawing is rendered at. */
const MIN_RENDER_DPI = 150;
const MAX_RENDER_DPI = 400;

/** Tesseract refuses an image with a side longer than this ("Image too large"); longer pages are scaled to fit. */
const TESSERACT_MAX_SIDE_PX = 32_767;

interface PreparedPage {
  /** The prepared page as Tesseract reads it: its grey pixels, or the bits of a bilevel one as it is. */
  image: PageImage;
  /** The prepared page's grey pixels (row-major), for cutting blocks out of it. */
  grey: Buffer;
  preparedWidth: number;
  preparedHeight: number;
  /** The page as given (before scaling). */
  width: number;
  height: number;
  /** The prepared page's resolution; undefined when the input's is not known. */
  dpi: number | undefined;
}

interface PageJob {
  fileIndex: number;
  page: number;
  file: InputFile;
  pdf?: PdfDocument;
}

/**
 * OCR of images and PDFs. A PDF page with its own text layer is read from it (no recognition, no cost in
 * time); a page without one is recognised from its scan's own pixels at the scan's resolution when it is
 * one image, else rendered (pdf-document.ts `scan`); a TIFF's pages are pages, a GIF is its
 * first frame. Each page is prepared by what it measures: scaled to the height of its text lines
 * (text-size.ts), denoised with a 3x3 median only when it is speckled (speckle.ts), a bilevel scan read
 * as its scanner made it, and handed to Tesseract with its true resolution, or none when that is unknown.
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
        quantity += checkPages(await imagePageCount(file, index), index);
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
   * Greyscale, white under any transparency, scaled so the text lines are the height Tesseract reads
   * best (text-size.ts) and within Tesseract's largest side, a 3x3 median when the page is speckled
   * (measured before scaling, on the page's own pixels), underlines and rules taken off (rules.ts), as
   * 8-bit grey (a bilevel page as bits) with the resolution scaling leaves. The median runs after the
   * scaling: on a page scaled down it costs a fraction. A bilevel page is only ever enlarged, never filtered.
   */
  async function preparePage(image: sharp.Sharp, fileIndex: number, dpi: number | undefined): Promise<PreparedPage> {
    const { data, info } = await decoding(fileIndex, () => image.flatten({ background: "#ffffff" }).greyscale().raw().toBuffer({ resolveWithObject: true }));
    const { width, height } = info;
    const grey = info.channels === 1 ? data : await sharp(data, { raw: info }).extractChannel(0).raw().toBuffer();
    const lineHeight = estimateTextLineHeight(grey, width, height);
    // A bilevel (1-bit) scan is already binarized by its scanner, halftoned photos and all: shrinking
    // it, a median or the rule remover only move Tesseract's layout analysis off what its CLI finds on
    // the same pixels (a two-column magazine page: 1.1 % errors against 0.1 %). Small text is still enlarged.
    const bilevel = isBilevel(grey);
    const textScale = bilevel ? Math.max(1, ocrScale(lineHeight)) : ocrScale(lineHeight);
    const scale = Math.min(textScale, TESSERACT_MAX_SIDE_PX / Math.max(width, height));
    const size = { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
    // libvips refuses a 3x3 window on an image narrower or shorter than 3 px (a 1x1 PNG is still a page).
    const denoise = !bilevel && size.width >= 3 && size.height >= 3 && isNoisy(grey, width, height);
    let filter = sharp(grey, { raw: { width, height, channels: 1 } });
    if (scale !== 1) filter = filter.resize({ ...size, fit: "fill" });
    if (denoise) filter = filter.median(3);
    const prepared = scale === 1 && !denoise ? grey : await decoding(fileIndex, () => filter.extractChannel(0).raw().toBuffer());
    // Only where the lines were measured: then they are ~20 px tall and the rule sizes are known to fit.
    if (lineHeight !== undefined && !bilevel) removeRules(prepared, size.width, size.height);
    // A 1-bit image spares Tesseract its own thresholding of the page (a quarter of a magazine page's
    // CPU); only for pages whose text lines were measured (a page of a few pixels stays grey).
    const input: PageImage =
      bilevel && scale === 1 && lineHeight !== undefined
        ? { ...size, pixels: packBits(prepared, size.width, size.height), bilevel: true }
        : { ...size, pixels: prepared, bilevel: false };
    return {
      image: input,
      grey: prepared,
      preparedWidth: size.width,
      preparedHeight: size.height,
      width,
      height,
      dpi: dpi === undefined ? undefined : dpi * scale,
    };
  }

  /**
   * Reads a prepared page. With `auto` (eng+rus, which picks a model per word), a block with a word
   * that mixes the scripts or is only the other script's look-alikes ("ЕХ" among Latin text) is read
   * again alone (its text lines only) with its own majority's language, so each block keeps its script; past
   * MAX_BLOCK_REREADS, the rest is settled letter by letter (script.ts).
   */
  async function read(page: PreparedPage, languages: string, signal?: AbortSignal): Promise<Recognition> {
    const first = await pool.recognize(page.image, { languages, dpi: page.dpi, signal });
    if (languages !== AUTO_LANGUAGES) return first;
    const languageOf = first.blocks.map((block) => dominantLanguage(block.text));
    const mixed = first.blocks.map((block, i) => languageOf[i] !== undefined && hasLookAlikeWords(block.text, languageOf[i]!));
    const pageLanguages = new Set(languageOf.filter((l): l is ScriptLanguage => l !== undefined));
    const rereads = mixed.filter(Boolean).length;
    if (rereads === 0) return first;
    if (pageLanguages.size === 1 && rereads > MAX_BLOCK_REREADS) {
      // A page in one script with stray letters everywhere: one more read of the whole page is cheapest.
      const [language] = [...pageLanguages] as [ScriptLanguage];
      const again = await pool.recognize(page.image, { languages: language, dpi: page.dpi, signal });
      return combineBlocks(again.blocks.map((block) => ({ ...block, text: unifyWordScripts(block.text, language) })));
    }
    let budget = MAX_BLOCK_REREADS;
    const blocks: RecognisedBlock[] = [];
    for (const [i, block] of first.blocks.entries()) {
      const language = languageOf[i];
      if (language === undefined) blocks.push(block);
      else if (mixed[i] && budget-- > 0) blocks.push(await rereadBlock(page, block, language, signal));
      else blocks.push({ ...block, text: unifyWordScripts(block.text, language) });
    }
    return combineBlocks(blocks);
  }

  /**
   * One block read again alone with `language`: its text lines (as the first reading found them) on
   * white, with a white margin round the block. Only the lines: read as one block of text (psm 6),
   * whatever else lies in the block's box would be read as words too, such as the photo a column wraps
   * round, which the page's layout analysis had left out (docs/benchmarks.md, OCR on real documents).
   */
  async function rereadBlock(page: PreparedPage, block: RecognisedBlock, language: ScriptLanguage, signal?: AbortSignal): Promise<RecognisedBlock> {
    const left = Math.max(0, block.left - BLOCK_MARGIN_PX);
    const top = Math.max(0, block.top - BLOCK_MARGIN_PX);
    const width = Math.min(page.preparedWidth, block.left + block.width + BLOCK_MARGIN_PX) - left;
    const height = Math.min(page.preparedHeight, block.top + block.height + BLOCK_MARGIN_PX) - top;
    if (width <= 0 || height <= 0) return { ...block, text: unifyWordScripts(block.text, language) };
    const pixels = Buffer.alloc(width * height, 255);
    for (const line of block.lines) {
      const x0 = Math.max(left, line.left - LINE_MARGIN_PX);
      const x1 = Math.min(left + width, line.left + line.width + LINE_MARGIN_PX);
      const y0 = Math.max(top, line.top - LINE_MARGIN_PX);
      const y1 = Math.min(top + height, line.top + line.height + LINE_MARGIN_PX);
      for (let y = y0; y < y1; y++) page.grey.copy(pixels, (y - top) * width + (x0 - left), y * page.preparedWidth + x0, y * page.preparedWidth + x1);
    }
    const again = await pool.recognize({ width, height, pixels, bilevel: false }, { languages: language, dpi: page.dpi, psm: 6, signal });
    if (again.words === 0) return { ...block, text: unifyWordScripts(block.text, language) };
    return { ...block, text: unifyWordScripts(again.text, language), confidenceSum: again.blocks.reduce((n, b) => n + b.confidenceSum, 0), words: again.words };
  }

  async function recognizePage(job: PageJob, languages: string, signal?: AbortSignal): Promise<OcrPage> {
    const base = { file_index: job.fileIndex, page: job.page };
    let page: PreparedPage;
    if (job.pdf) {
      const text = await job.pdf.pageText(job.page);
      if (/\S/.test(text)) {
        return { ...base, source: "text_layer", text, confidence: null, language: scriptLanguage(text), width_px: null, height_px: null };
      }
      const raster = await job.pdf.scan(job.page, { dpi, minDpi: MIN_RENDER_DPI, maxDpi: MAX_RENDER_DPI, maxPixels: maxRenderPixels, signal });
      page = await preparePage(
        sharp(raster.data, { raw: { width: raster.width, height: raster.height, channels: raster.channels } }),
        job.fileIndex,
        trueDpi(raster.dpi),
      );
    } else {
      // A TIFF's pages are pages; every other image is its first (a GIF: its first frame).
      const input = sharpInput(job.file.mimeType === TIFF_MIME_TYPE ? { page: job.page - 1 } : {});
      const density = (await decoding(job.fileIndex, () => sharp(job.file.data, input).metadata())).density;
      page = await preparePage(sharp(job.file.data, input).autoOrient(), job.fileIndex, trueDpi(density));
    }
    const result = await read(page, languages, signal);
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
          const pages = checkPages(await imagePageCount(file, fileIndex), fileIndex);
          for (let page = 1; page <= pages; page++) jobs.push({ fileIndex, page, file });
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

function recognised(result: Recognition): Pick<OcrPage, "text" | "confidence" | "language"> {
  return { text: result.text, confidence: result.confidence, language: scriptLanguage(result.text) };
}

/**
 * The resolution an image says it has, when it is one Tesseract can use; otherwise undefined and
 * Tesseract estimates it from the text, as its CLI does (assuming 300 read a 96 DPI screenshot's
 * small text as noise).
 */
function trueDpi(density: number | undefined): number | undefined {
  return density !== undefined && density >= 70 && density <= 2400 ? density : undefined;
}

/**
 * Whether a grey page is black ink on white and nothing between: a bilevel scan (or its PDF image) as it
 * was made. A blank page is not one: there is nothing on it to keep as it is.
 */
function isBilevel(grey: Buffer): boolean {
  // A plain typed-array view and a hoisted length: several times faster than the Buffer's index on 9 MP.
  const pixels = new Uint8Array(grey.buffer, grey.byteOffset, grey.length);
  let black = false;
  for (let i = 0, n = pixels.length; i < n; i++) {
    const value = pixels[i]!;
    if (value === 0) black = true;
    else if (value !== 255) return false;
  }
  return black;
}

/** A bilevel grey page as Tesseract's binary image: rows padded to a byte, the first pixel the top bit, a set bit white. */
function packBits(grey: Buffer, width: number, height: number): Buffer {
  const stride = Math.ceil(width / 8);
  const bits = Buffer.alloc(stride * height);
  const pixels = new Uint8Array(grey.buffer, grey.byteOffset, grey.length);
  for (let y = 0, row = 0, out = 0; y < height; y++, row += width, out += stride) {
    for (let x = 0; x < width; x++) if (pixels[row + x] !== 0) bits[out + (x >> 3)]! |= 0x80 >> (x & 7);
  }
  return bits;
}

/** The pages of an image file: a TIFF's directories; one for every other type (a GIF's first frame). */
async function imagePageCount(file: InputFile, fileIndex: number): Promise<number> {
  if (file.mimeType !== TIFF_MIME_TYPE) return 1;
  const meta = await decoding(fileIndex, () => sharp(file.data, sharpInput({ limitInputPixels: false })).metadata());
  return meta.pages ?? 1;
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
