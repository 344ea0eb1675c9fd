import exifr from "exifr";
import sharp from "sharp";
import type { EngineResult, ImageAnalysisEngine, ImageAnalysisRequest, InputFile, Quantity, RunOptions } from "../provider";
import { IMAGE_MIME_TYPES, assertAccepted, assertFileCount, eachImage, decoding, imageHeader, sharpInput } from "../input";
import { dHash, dominantColours, laplacianVariance, type DominantColour } from "./image-measures";
import { jsonResult } from "../json-result";

export const IMAGE_ANALYSIS_ACCEPTED_TYPES: readonly string[] = IMAGE_MIME_TYPES;

/** The analysis works on a copy at most this many pixels wide or high: enough for colours, blur and hashes. */
const WORKING_SIDE = 512;
/** Below this Laplacian variance (at the 512 px working size) a photo looks blurred; the usual rule of thumb is 100. */
const BLURRY_BELOW = 100;

export interface LocalImageAnalysisLimits {
  maxFiles: number;
}

export interface ImageAnalysis {
  file_index: number;
  format: string;
  /** As displayed: EXIF orientation applied. */
  width: number;
  height: number;
  /** As stored in the file, before orientation. */
  stored_width: number;
  stored_height: number;
  /** EXIF orientation 1-8, null when the file has none. */
  orientation: number | null;
  channels: number;
  has_alpha: boolean;
  color_space: string;
  /** Pixels per inch recorded in the file, null when none. */
  density: number | null;
  size_bytes: number;
  /** EXIF/TIFF/GPS tags, as exifr names them; binary values left out; null when the file has no EXIF. */
  exif: Record<string, unknown> | null;
  /** Up to five colours, most frequent first, with the share of the image each covers. */
  dominant_colors: DominantColour[];
  /** Mean luminance 0-255. */
  brightness: number;
  sharpness: { laplacian_variance: number; blurry: boolean };
  /** 64-bit difference hash (dHash) as 16 hex digits: near-identical images differ in few bits. */
  dhash: string;
}

export interface ImageAnalysisDocument {
  object: "image_analysis_result";
  images: ImageAnalysis[];
}

/**
 * Image analysis with sharp and exifr: size, format, EXIF, dominant colours, a blur score and a
 * perceptual hash. One decode per image: a downscaled, upright, opaque RGB copy feeds every measure.
 */
export function createLocalImageAnalysisEngine(options: { limits: LocalImageAnalysisLimits }): ImageAnalysisEngine {
  const { limits } = options;

  async function measure(request: ImageAnalysisRequest): Promise<Quantity> {
    assertFileCount(request.files, limits.maxFiles);
    for (const [index, file] of request.files.entries()) {
      assertAccepted(file, IMAGE_ANALYSIS_ACCEPTED_TYPES, index);
      await imageHeader(file, index);
    }
    return { unit: "image", quantity: request.files.length };
  }

  async function run(request: ImageAnalysisRequest, runOptions: RunOptions = {}): Promise<EngineResult> {
    assertFileCount(request.files, limits.maxFiles);
    const images = await eachImage(request.files, IMAGE_ANALYSIS_ACCEPTED_TYPES, runOptions, analyse);
    const document: ImageAnalysisDocument = { object: "image_analysis_result", images };
    return jsonResult("image", images.length, document, "image-analysis.json");
  }

  return {
    operation: "image_analysis",
    unit: "image",
    measure,
    run,
    warmUp: async () => {
      const probe = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#808080" } })
        .jpeg()
        .toBuffer();
      await analyse({ data: probe, mimeType: "image/jpeg" }, 0);
    },
    close: () => Promise.resolve(),
  };
}

export async function analyse(file: InputFile, fileIndex: number): Promise<ImageAnalysis> {
  const header = await imageHeader(file, fileIndex);
  const meta = await decoding(fileIndex, () => sharp(file.data, sharpInput()).metadata());
  const { data, info } = await decoding(fileIndex, () =>
    sharp(file.data, sharpInput())
      .autoOrient()
      .resize({ width: WORKING_SIDE, height: WORKING_SIDE, fit: "inside", withoutEnlargement: true })
      .flatten({ background: "#ffffff" })
      .toColourspace("srgb")
      .raw()
      .toBuffer({ resolveWithObject: true }),
  );
  const rgb = { data, width: info.width, height: info.height, channels: info.channels };
  const grey = toGrey(rgb);
  const variance = laplacianVariance(grey.data, grey.width, grey.height);
  return {
    file_index: fileIndex,
    format: header.format,
    width: header.width,
    height: header.height,
    stored_width: meta.width,
    stored_height: meta.height,
    orientation: meta.orientation ?? null,
    channels: meta.channels,
    has_alpha: meta.hasAlpha,
    color_space: meta.space,
    density: meta.density ?? null,
    size_bytes: file.data.length,
    exif: await readExif(file.data),
    dominant_colors: dominantColours(rgb),
    brightness: Math.round((grey.data.reduce((sum, v) => sum + v, 0) / grey.data.length) * 100) / 100,
    sharpness: { laplacian_variance: Math.round(variance * 100) / 100, blurry: variance < BLURRY_BELOW },
    dhash: await dHash(grey),
  };
}

function toGrey(rgb: { data: Buffer; width: number; height: number; channels: number }): { data: Buffer; width: number; height: number } {
  const pixels = rgb.width * rgb.height;
  const grey = Buffer.allocUnsafe(pixels);
  for (let i = 0, j = 0; i < pixels; i++, j += rgb.channels) {
    // ITU-R BT.601 luma, as libvips' greyscale of sRGB.
    grey[i] = Math.round(rgb.data[j]! * 0.299 + rgb.data[j + 1]! * 0.587 + rgb.data[j + 2]! * 0.114);
  }
  return { data: grey, width: rgb.width, height: rgb.height };
}

async function readExif(data: Buffer): Promise<Record<string, unknown> | null> {
  let tags: Record<string, unknown> | undefined;
  try {
    tags = (await exifr.parse(data, {
      tiff: true,
      exif: true,
      gps: true,
      ifd1: false,
      interop: false,
      xmp: false,
      icc: false,
      iptc: false,
      jfif: false,
      ihdr: false,
      makerNote: false,
      userComment: false,
      translateValues: true,
      reviveValues: true,
      mergeOutput: true,
    })) as Record<string, unknown> | undefined;
  } catch {
    // A format exifr does not read (GIF, some WebP) or a broken EXIF block: no EXIF, not a failed analysis.
    return null;
  }
  if (!tags) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tags)) {
    const json = jsonValue(value);
    if (json !== undefined) out[key] = json;
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** EXIF values as JSON: dates as their wall-clock time (EXIF has no time zone), binary left out. */
function jsonValue(value: unknown): unknown {
  if (value instanceof Date || Object.prototype.toString.call(value) === "[object Date]") {
    const d = value as Date;
    if (Number.isNaN(d.getTime())) return undefined;
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  if (typeof value === "string") return value.replace(/\0+$/, "").trim();
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "boolean") return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "number" && Number.isFinite(v))) return value.length <= 16 ? value : undefined;
  return undefined;
}
