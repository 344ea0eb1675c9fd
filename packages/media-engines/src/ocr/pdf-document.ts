import path from "node:path";
import type { PDFDocumentProxy, PDFPageProxy } from "pdfjs-dist/types/src/display/api";
import { EngineAbortedError, QuantityUnknownError, throwIfAborted } from "../errors";
import { importEsm } from "../esm";

type PdfJs = typeof import("pdfjs-dist/legacy/build/pdf.mjs");

/** The legacy build runs on Node 20 (the modern one and pdfjs-dist 6 need Node 22); never load two pdf.js builds. */
const PDFJS_ENTRY = "pdfjs-dist/legacy/build/pdf.mjs";
const pdfjsDir = path.dirname(require.resolve("pdfjs-dist/package.json"));
/** pdf.js reads these with fs in Node: folder paths, with the trailing slash it appends file names to. */
const assetDir = (name: string) => path.join(pdfjsDir, name) + path.sep;

/** Largest embedded image pdf.js decodes (pixels): a bomb guard; a 600 DPI A3 scan is ~70 MP. */
const MAX_EMBEDDED_IMAGE_PIXELS = 100_000_000;

let pdfjs: Promise<PdfJs> | undefined;

export function loadPdfJs(): Promise<PdfJs> {
  pdfjs ??= importEsm<PdfJs>(PDFJS_ENTRY);
  return pdfjs;
}

export interface PageRaster {
  /** RGBA, 4 bytes per pixel, row-major, no padding; opaque (rendered on white). */
  data: Buffer;
  width: number;
  height: number;
  dpi: number;
}

/** An open PDF. Call destroy() when done: pdf.js keeps the parsed document until then. */
export class PdfDocument {
  private constructor(private readonly doc: PDFDocumentProxy) {}

  get pageCount(): number {
    return this.doc.numPages;
  }

  /**
   * Opens a PDF; every failure to read it (not a PDF, corrupt beyond pdf.js' repairs, a password) is a
   * QuantityUnknownError, since its page count, and so its cost, cannot be known.
   */
  static async open(data: Buffer, fileIndex?: number): Promise<PdfDocument> {
    const { getDocument } = await loadPdfJs();
    const task = getDocument({
      // A copy: pdf.js may transfer (detach) the buffer it is given.
      data: new Uint8Array(data),
      standardFontDataUrl: assetDir("standard_fonts"),
      cMapUrl: assetDir("cmaps"),
      cMapPacked: true,
      wasmUrl: assetDir("wasm"),
      iccUrl: assetDir("iccs"),
      isEvalSupported: false,
      maxImageSize: MAX_EMBEDDED_IMAGE_PIXELS,
      // Errors only: pdf.js warns on every font quirk of real-world files.
      verbosity: 0,
    });
    try {
      return new PdfDocument(await task.promise);
    } catch (error) {
      await task.destroy().catch(() => undefined);
      const name = (error as { name?: unknown }).name;
      const label = fileIndex === undefined ? "the PDF" : `file ${fileIndex} (PDF)`;
      if (name === "PasswordException") {
        throw new QuantityUnknownError("encrypted", `${label} is password-protected: its pages cannot be read`, fileIndex, { cause: error });
      }
      throw new QuantityUnknownError("unreadable", `${label} cannot be read: ${(error as Error).message}`, fileIndex, { cause: error });
    }
  }

  /**
   * The page's own text (1-based page number): lines as pdf.js reports them (`hasEOL`), trimmed.
   * Empty for a scanned page.
   */
  async pageText(pageNumber: number): Promise<string> {
    const page = await this.doc.getPage(pageNumber);
    try {
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items) {
        if (!("str" in item)) continue;
        text += item.str;
        if (item.hasEOL) text += "\n";
      }
      return text
        .split("\n")
        .map((line) => line.replace(/\s+/g, " ").trim())
        .join("\n")
        .replace(/\n{3,}/g, "\n\n")
        .trim();
    } finally {
      page.cleanup();
    }
  }

  /**
   * Renders a page on white at `dpi`, lowered so the raster stays within `maxPixels`. Aborting cancels
   * the render.
   */
  async render(pageNumber: number, dpi: number, maxPixels: number, signal?: AbortSignal): Promise<PageRaster> {
    throwIfAborted(signal);
    const page = await this.doc.getPage(pageNumber);
    const canvasFactory = this.doc.canvasFactory as {
      create(width: number, height: number): { canvas: unknown; context: CanvasRenderingContext2DLike };
      destroy(pair: { canvas: unknown; context: unknown }): void;
    };
    try {
      const base = page.getViewport({ scale: 1 });
      const wanted = dpi / 72;
      const limit = Math.sqrt(maxPixels / (base.width * base.height));
      const scale = Math.min(wanted, limit);
      const viewport = page.getViewport({ scale });
      const width = Math.floor(viewport.width);
      const height = Math.floor(viewport.height);
      const pair = canvasFactory.create(width, height);
      try {
        // The canvas is @napi-rs/canvas's, which pdf.js' Node canvas factory made; the types name the DOM's.
        const params = { canvas: pair.canvas, canvasContext: pair.context, viewport, background: "#ffffff" };
        const task = page.render(params as unknown as Parameters<PDFPageProxy["render"]>[0]);
        const onAbort = () => task.cancel();
        signal?.addEventListener("abort", onAbort, { once: true });
        try {
          await task.promise;
        } catch (error) {
          if (signal?.aborted) throw new EngineAbortedError({ cause: error });
          throw error;
        } finally {
          signal?.removeEventListener("abort", onAbort);
        }
        const rgba = pair.context.getImageData(0, 0, width, height).data;
        return { data: Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), width, height, dpi: Math.round(scale * 72) };
      } finally {
        canvasFactory.destroy(pair);
      }
    } finally {
      page.cleanup();
    }
  }

  async destroy(): Promise<void> {
    await this.doc.destroy();
  }
}

interface CanvasRenderingContext2DLike {
  getImageData(x: number, y: number, width: number, height: number): { data: Uint8ClampedArray };
}

/** The page count of a PDF, for the price estimate; QuantityUnknownError when it cannot be read. */
export async function countPdfPages(data: Buffer, fileIndex?: number): Promise<number> {
  const doc = await PdfDocument.open(data, fileIndex);
  try {
    return doc.pageCount;
  } finally {
    await doc.destroy();
  }
}
