import sharp, { type SharpOptions } from "sharp";
import { InvalidInputError, LimitExceededError, UnsupportedMediaTypeError, throwIfAborted } from "./errors";
import type { InputFile, RunOptions } from "./provider";

export const IMAGE_MIME_TYPES = ["image/png", "image/jpeg", "image/webp", "image/tiff", "image/gif"] as const;
export const PDF_MIME_TYPE = "application/pdf";

/**
 * Decompression-bomb guard: sharp reads the header and refuses before decoding anything larger.
 * 100 MP covers a 12 MP photo many times over and a 600 DPI A3 scan (~70 MP).
 */
export const MAX_INPUT_PIXELS = 100_000_000;

/** How every local engine opens an input image: pixel limit, and only real decode errors are fatal. */
export function sharpInput(options: SharpOptions = {}): SharpOptions {
  return { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error", ...options };
}

export function isImage(file: InputFile): boolean {
  return (IMAGE_MIME_TYPES as readonly string[]).includes(file.mimeType);
}

export function isPdf(file: InputFile): boolean {
  return file.mimeType === PDF_MIME_TYPE;
}

export function assertAccepted(file: InputFile, accepted: readonly string[], fileIndex: number): void {
  if (!accepted.includes(file.mimeType)) throw new UnsupportedMediaTypeError(file.mimeType, accepted, fileIndex);
}

export function assertFileCount(files: readonly InputFile[], max: number): void {
  if (files.length === 0) throw new InvalidInputError("no input file");
  if (files.length > max) {
    throw new LimitExceededError("files", max, files.length, `this model takes at most ${max} files per job, got ${files.length}`);
  }
}

/**
 * Reads an image's header (no decode): its size as displayed (EXIF orientation applied), refusing more
 * than MAX_INPUT_PIXELS. A header sharp cannot read is an InvalidInputError.
 */
export async function imageHeader(file: InputFile, fileIndex: number): Promise<{ width: number; height: number; format: string }> {
  let meta: sharp.Metadata;
  try {
    // Header only: the pixel limit is checked below, so that it is reported as a limit, not as a broken file.
    meta = await sharp(file.data, sharpInput({ limitInputPixels: false })).metadata();
  } catch (error) {
    throw new InvalidInputError(`file ${fileIndex} is not a readable image: ${(error as Error).message}`, { file_index: fileIndex });
  }
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (width * height > MAX_INPUT_PIXELS) {
    throw new LimitExceededError(
      "pixels",
      MAX_INPUT_PIXELS,
      width * height,
      `file ${fileIndex} is ${width}x${height} pixels; at most ${MAX_INPUT_PIXELS} pixels are accepted`,
    );
  }
  return { width, height, format: meta.format };
}

/** Runs a sharp pipeline, turning its failures (undecodable input, pixel limit) into InvalidInputError. */
export async function decoding<T>(fileIndex: number | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InvalidInputError || error instanceof LimitExceededError) throw error;
    const which = fileIndex === undefined ? "the image" : `file ${fileIndex}`;
    throw new InvalidInputError(`${which} could not be processed: ${(error as Error).message}`, { file_index: fileIndex }, { cause: error });
  }
}

/**
 * Runs `work` on each image in order, one at a time: each file checked against `accepted` first, the run
 * stopped between images when `signal` aborts, and progress reported per image (done = 0 first).
 */
export async function eachImage<T>(
  files: readonly InputFile[],
  accepted: readonly string[],
  { signal, onProgress }: RunOptions,
  work: (file: InputFile, index: number) => Promise<T>,
): Promise<T[]> {
  const total = files.length;
  onProgress?.({ done: 0, total, unit: "image" });
  const results: T[] = [];
  for (const [index, file] of files.entries()) {
    throwIfAborted(signal);
    assertAccepted(file, accepted, index);
    results.push(await work(file, index));
    onProgress?.({ done: index + 1, total, unit: "image" });
  }
  return results;
}
