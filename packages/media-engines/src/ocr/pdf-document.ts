import path from "node:path";
import type { PDFDocumentProxy, PDFPageProxy } from "pdfjs-dist/types/src/display/api";
import sharp from "sharp";
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
  /** `channels` bytes per pixel (grey, RGB or RGBA), row-major, no padding; a render is opaque RGBA on white. */
  data: Buffer;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
  dpi: number;
}

export interface ScanOptions {
  /** Resolution of a page with no image (vector drawing only). */
  dpi: number;
  /** Bounds of the resolution a page mixing images and other drawing is rendered at. */
  minDpi: number;
  maxDpi: number;
  maxPixels: number;
  signal?: AbortSignal;
}

type Matrix = [number, number, number, number, number, number];

/** An image the page paints: its pdf.js object (or inline data), its size in pixels, where it is drawn. */
interface PaintedImage {
  /** A paintImageXObject's object id, or the image itself (inline images, masks). */
  source: unknown;
  width: number;
  height: number;
  /** Image space (the unit square) to the page's viewport at scale 1 (points, y down). */
  transform: Matrix;
}

/** Operators that paint nothing (state, structure, clipping): a page with only these and one image is that image. */
const NON_PAINTING_OPS = new Set([
  "dependency",
  "setLineWidth",
  "setLineCap",
  "setLineJoin",
  "setMiterLimit",
  "setDash",
  "setRenderingIntent",
  "setFlatness",
  "setGState",
  "save",
  "restore",
  "transform",
  "beginText",
  "endText",
  "setCharSpacing",
  "setWordSpacing",
  "setHScale",
  "setLeading",
  "setFont",
  "setTextRenderingMode",
  "setTextRise",
  "moveText",
  "setLeadingMoveText",
  "setTextMatrix",
  "nextLine",
  "setStrokeColorSpace",
  "setFillColorSpace",
  "setStrokeColor",
  "setStrokeColorN",
  "setFillColor",
  "setFillColorN",
  "setStrokeGray",
  "setFillGray",
  "setStrokeRGBColor",
  "setFillRGBColor",
  "setStrokeCMYKColor",
  "setFillCMYKColor",
  "markPoint",
  "markPointProps",
  "beginMarkedContent",
  "beginMarkedContentProps",
  "endMarkedContent",
  "beginCompat",
  "endCompat",
  "paintFormXObjectBegin",
  "paintFormXObjectEnd",
  "beginGroup",
  "endGroup",
  "beginAnnotation",
  "endAnnotation",
  "setStrokeTransparent",
  "setFillTransparent",
]);

const multiply = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[2] * n[1],
  m[1] * n[0] + m[3] * n[1],
  m[0] * n[2] + m[2] * n[3],
  m[1] * n[2] + m[3] * n[3],
  m[0] * n[4] + m[2] * n[5] + m[4],
  m[1] * n[4] + m[3] * n[5] + m[5],
];

/** An image's resolution where it is drawn (pixels per inch along its rows and its columns). */
function drawnDpi(image: PaintedImage): { x: number; y: number } {
  const [a, b, c, d] = image.transform;
  return { x: (image.width * 72) / Math.hypot(a, b), y: (image.height * 72) / Math.hypot(c, d) };
}

/**
 * The clockwise turn that makes an image drawn with `transform` upright on the page, when it is drawn
 * along the page's axes without a mirror; undefined otherwise. Image rows run down from the unit
 * square's top, so its columns' direction on the page is minus its y axis.
 */
function uprightTurn([a, b, c, d]: Matrix): 0 | 90 | 180 | 270 | undefined {
  const sign = (x: number, y: number): string => {
    const big = Math.max(Math.abs(x), Math.abs(y));
    if (Math.abs(x) > big * 1e-3 && Math.abs(y) > big * 1e-3) return "skew";
    return Math.abs(x) >= Math.abs(y) ? (x > 0 ? "+x" : "-x") : y > 0 ? "+y" : "-y";
  };
  const turns: Record<string, 0 | 90 | 180 | 270> = { "+x,+y": 0, "+y,-x": 90, "-x,-y": 180, "-y,+x": 270 };
  return turns[`${sign(a, b)},${sign(-c, -d)}`];
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
   * The page as the OCR should see it: a page that is one image drawn upright (a scan) is that image's
   * own pixels at its own resolution, since a scan resampled to another resolution blurs its glyphs; a
   * page mixing images and other drawing is rendered at the resolution of its largest image within
   * [minDpi, maxDpi]; a page with no image at `dpi`.
   */
  async scan(pageNumber: number, options: ScanOptions): Promise<PageRaster> {
    throwIfAborted(options.signal);
    const { OPS } = await loadPdfJs();
    const page = await this.doc.getPage(pageNumber);
    const images: PaintedImage[] = [];
    let otherPainting = false;
    try {
      const names = new Map(Object.entries(OPS).map(([name, id]) => [id, name]));
      const { fnArray, argsArray } = await page.getOperatorList();
      throwIfAborted(options.signal);
      const stack: Matrix[] = [];
      let ctm = page.getViewport({ scale: 1 }).transform as Matrix;
      fnArray.forEach((fn, i) => {
        const args = argsArray[i] as unknown[];
        const name = names.get(fn) ?? "";
        if (name === "save") stack.push(ctm);
        else if (name === "restore" || name === "paintFormXObjectEnd") ctm = stack.pop() ?? ctm;
        else if (name === "transform") ctm = multiply(ctm, args as Matrix);
        else if (name === "paintFormXObjectBegin") {
          stack.push(ctm);
          if (Array.isArray(args[0])) ctm = multiply(ctm, args[0] as Matrix);
        } else if (name === "paintImageXObject") {
          images.push({ source: args[0], width: args[1] as number, height: args[2] as number, transform: ctm });
        } else if (name === "paintInlineImageXObject" || name === "paintImageMaskXObject") {
          const image = args[0] as { width: number; height: number };
          images.push({ source: image, width: image.width, height: image.height, transform: ctm });
          otherPainting ||= name === "paintImageMaskXObject";
        } else if (name === "constructPath") otherPainting ||= args[0] !== OPS.endPath;
        else if (!NON_PAINTING_OPS.has(name)) otherPainting = true;
      });
      const [only] = images;
      if (only && images.length === 1 && !otherPainting) {
        const raster = await this.imagePixels(page, only, options.maxPixels);
        if (raster) return raster;
      }
    } finally {
      page.cleanup();
    }
    const largest = images.reduce<PaintedImage | undefined>((a, b) => (a && a.width * a.height >= b.width * b.height ? a : b), undefined);
    const dpi = largest ? Math.min(options.maxDpi, Math.max(options.minDpi, Math.max(...Object.values(drawnDpi(largest))))) : options.dpi;
    return this.render(pageNumber, dpi, options.maxPixels, options.signal);
  }

  /**
   * An image's own pixels, turned upright, with its resolution; undefined where the page must be rendered
   * instead: an image drawn skewed or mirrored, with unequal resolutions across and down (fax modes), or
   * over maxPixels.
   */
  private async imagePixels(page: PDFPageProxy, image: PaintedImage, maxPixels: number): Promise<PageRaster | undefined> {
    const turn = uprightTurn(image.transform);
    const dpi = drawnDpi(image);
    if (turn === undefined || Math.abs(dpi.x - dpi.y) > 0.02 * Math.max(dpi.x, dpi.y) || image.width * image.height > maxPixels) return undefined;
    const objects = (id: string) => (id.startsWith("g_") ? page.commonObjs : page.objs);
    const data = (
      typeof image.source === "string" ? await new Promise((resolve) => objects(image.source as string).get(image.source as string, resolve)) : image.source
    ) as { width?: number; height?: number; kind?: number; data?: Uint8Array | Uint8ClampedArray } | null;
    if (!data?.data || data.width !== image.width || data.height !== image.height) return undefined;
    const { width, height } = image;
    let pixels: Buffer;
    let channels: 1 | 3 | 4;
    if (data.kind === 1) {
      // pdf.js' 1 bit per pixel: rows padded to a byte, a set bit white.
      const stride = Math.ceil(width / 8);
      pixels = Buffer.alloc(width * height);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) pixels[y * width + x] = (data.data[y * stride + (x >> 3)]! & (0x80 >> (x & 7))) !== 0 ? 255 : 0;
      }
      channels = 1;
    } else if (data.kind === 2 || data.kind === 3) {
      channels = data.kind === 2 ? 3 : 4;
      if (data.data.length < width * height * channels) return undefined;
      pixels = Buffer.from(data.data.buffer, data.data.byteOffset, width * height * channels);
    } else return undefined;
    const resolution = (dpi.x + dpi.y) / 2;
    if (turn === 0) return { data: pixels, width, height, channels, dpi: resolution };
    const turned = await sharp(pixels, { raw: { width, height, channels } }).rotate(turn).raw().toBuffer({ resolveWithObject: true });
    return { data: turned.data, width: turned.info.width, height: turned.info.height, channels, dpi: resolution };
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
        return { data: Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), width, height, channels: 4, dpi: Math.round(scale * 72) };
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
