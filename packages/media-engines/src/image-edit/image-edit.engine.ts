import sharp from "sharp";
import { InvalidInputError, LimitExceededError, throwIfAborted } from "../errors";
import type { EditPlan, EditStep, EngineResult, ImageEditEngine, ImageEditRequest, OutputFormat, Quantity, RunOptions } from "../provider";
import { IMAGE_MIME_TYPES, assertAccepted, decoding, imageHeader, sharpInput } from "../input";

export const IMAGE_EDIT_ACCEPTED_TYPES: readonly string[] = IMAGE_MIME_TYPES;

/** Output cap: no plan may produce (or pass through) an image larger than this. */
export const MAX_OUTPUT_PIXELS = 50_000_000;
export const MAX_OUTPUT_SIDE = 16_383;
const DEFAULT_QUALITY = 80;

const SEPIA: [[number, number, number], [number, number, number], [number, number, number]] = [
  [0.393, 0.769, 0.189],
  [0.349, 0.686, 0.168],
  [0.272, 0.534, 0.131],
];

interface Size {
  width: number;
  height: number;
}

/** The size after a step, as sharp computes it (to the pixel for right angles and explicit sizes). */
export function sizeAfter(step: EditStep, size: Size): Size {
  const { width, height } = size;
  switch (step.op) {
    case "rotate": {
      if (step.degrees % 180 === 0) return size;
      if (step.degrees % 90 === 0) return { width: height, height: width };
      const rad = (step.degrees * Math.PI) / 180;
      const cos = Math.abs(Math.cos(rad));
      const sin = Math.abs(Math.sin(rad));
      return { width: Math.round(width * cos + height * sin), height: Math.round(width * sin + height * cos) };
    }
    case "resize":
      return resizeTarget(step, size);
    case "crop":
      return { width: Math.min(step.width, width - (step.left ?? 0)), height: Math.min(step.height, height - (step.top ?? 0)) };
    case "crop_square": {
      const side = Math.min(width, height);
      return { width: side, height: side };
    }
    default:
      return size;
  }
}

function resizeTarget(step: Extract<EditStep, { op: "resize" }>, { width, height }: Size): Size {
  if (step.percent !== undefined) {
    return { width: Math.max(1, Math.round((width * step.percent) / 100)), height: Math.max(1, Math.round((height * step.percent) / 100)) };
  }
  if (step.fit === "fill" && step.width !== undefined && step.height !== undefined) return { width: step.width, height: step.height };
  const scale = Math.min(step.width !== undefined ? step.width / width : Infinity, step.height !== undefined ? step.height / height : Infinity);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** Every intermediate size of a plan on an input of `size`; LimitExceededError when one is over the cap. */
export function planSizes(plan: EditPlan, size: Size): Size[] {
  const sizes = [size];
  let current = size;
  for (const step of plan.steps) {
    current = sizeAfter(step, current);
    if (current.width < 1 || current.height < 1)
      throw new InvalidInputError(`"${step.op}" leaves nothing of a ${sizes.at(-1)?.width}x${sizes.at(-1)?.height} image`);
    if (current.width * current.height > MAX_OUTPUT_PIXELS || current.width > MAX_OUTPUT_SIDE || current.height > MAX_OUTPUT_SIDE) {
      throw new LimitExceededError(
        "output_pixels",
        MAX_OUTPUT_PIXELS,
        current.width * current.height,
        `the edit would make a ${current.width}x${current.height} image; at most ${MAX_OUTPUT_PIXELS} pixels and ${MAX_OUTPUT_SIDE} per side`,
      );
    }
    sizes.push(current);
  }
  return sizes;
}

function applyStep(image: sharp.Sharp, step: EditStep, size: Size, transparent: boolean): sharp.Sharp {
  switch (step.op) {
    case "rotate":
      return step.degrees === 0 ? image : image.rotate(step.degrees, { background: transparent ? { r: 0, g: 0, b: 0, alpha: 0 } : "#ffffff" });
    case "flip":
      return step.axis === "vertical" ? image.flip() : image.flop();
    case "resize": {
      const target = resizeTarget(step, size);
      return image.resize({ width: target.width, height: target.height, fit: "fill" });
    }
    case "crop": {
      const left = step.left ?? Math.floor((size.width - Math.min(step.width, size.width)) / 2);
      const top = step.top ?? Math.floor((size.height - Math.min(step.height, size.height)) / 2);
      if (left >= size.width || top >= size.height) {
        throw new InvalidInputError(`crop offset ${left},${top} is outside the ${size.width}x${size.height} image`);
      }
      return image.extract({ left, top, width: Math.min(step.width, size.width - left), height: Math.min(step.height, size.height - top) });
    }
    case "crop_square": {
      const side = Math.min(size.width, size.height);
      return image.extract({ left: Math.floor((size.width - side) / 2), top: Math.floor((size.height - side) / 2), width: side, height: side });
    }
    case "grayscale":
      return image.greyscale();
    case "blur":
      return image.blur(step.sigma);
    case "sharpen":
      return image.sharpen({ sigma: step.sigma });
    case "brightness":
      return image.modulate({ brightness: step.factor });
    case "contrast":
      return image.linear(step.factor, 128 * (1 - step.factor));
    case "saturation":
      return image.modulate({ saturation: step.factor });
    case "sepia":
      return image.recomb(SEPIA);
    case "invert":
      return image.negate({ alpha: false });
  }
}

function outputFormat(plan: EditPlan, inputFormat: string): OutputFormat {
  if (plan.format) return plan.format;
  return inputFormat === "jpeg" || inputFormat === "webp" ? inputFormat : "png";
}

function encode(image: sharp.Sharp, format: OutputFormat, quality: number): sharp.Sharp {
  switch (format) {
    case "jpeg":
      return image.flatten({ background: "#ffffff" }).jpeg({ quality });
    case "webp":
      return image.webp({ quality });
    case "png":
      return image.png({ compressionLevel: 6 });
  }
}

/**
 * Image editing with sharp, following a plan from parseEditPrompt. Each step runs as its own sharp
 * pipeline on the previous step's raw pixels, because sharp applies the operations of ONE pipeline in
 * its own fixed order (a rotate and a resize in one pipeline do not happen in the order asked). The
 * first step reads the encoded input (so JPEG shrink-on-load still speeds up a downscale) and the last
 * one encodes the output. Steps that need colour (sepia) get it back after a grayscale step.
 */
export function createLocalImageEditEngine(): ImageEditEngine {
  async function measure(request: ImageEditRequest): Promise<Quantity> {
    assertAccepted(request.file, IMAGE_EDIT_ACCEPTED_TYPES, 0);
    await imageHeader(request.file, 0);
    return { unit: "request", quantity: 1 };
  }

  async function run(request: ImageEditRequest, options: RunOptions = {}): Promise<EngineResult> {
    const { signal, onProgress } = options;
    const { plan, file } = request;
    assertAccepted(file, IMAGE_EDIT_ACCEPTED_TYPES, 0);
    const header = await imageHeader(file, 0);
    const sizes = planSizes(plan, header);
    const format = outputFormat(plan, header.format);
    const quality = plan.quality ?? DEFAULT_QUALITY;
    const transparent = format !== "jpeg";
    const total = plan.steps.length;
    onProgress?.({ done: 0, total, unit: "step" });

    let image = sharp(file.data, sharpInput()).autoOrient();
    for (const [index, step] of plan.steps.entries()) {
      throwIfAborted(signal);
      const input = step.op === "sepia" ? image.toColourspace("srgb") : image;
      image = applyStep(input, step, sizes[index]!, transparent);
      if (index < total - 1) {
        const { data, info } = await decoding(0, () => image.raw().toBuffer({ resolveWithObject: true }));
        image = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
        onProgress?.({ done: index + 1, total, unit: "step" });
      }
    }
    throwIfAborted(signal);
    const { data, info } = await decoding(0, () => encode(image, format, quality).toBuffer({ resolveWithObject: true }));
    if (total > 0) onProgress?.({ done: total, total, unit: "step" });
    return {
      unit: "request",
      quantity: 1,
      data,
      mimeType: `image/${info.format === "jpeg" ? "jpeg" : info.format}`,
      filename: `edited.${format === "jpeg" ? "jpg" : format}`,
    };
  }

  return {
    operation: "image_edit",
    unit: "request",
    measure,
    run,
    warmUp: async () => {
      // Loads libvips' codecs once: the first decode and encode of a process are the slow ones.
      const probe = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#808080" } })
        .jpeg()
        .toBuffer();
      await sharp(probe).resize(4).png().toBuffer();
      await sharp(probe).webp().toBuffer();
    },
    close: () => Promise.resolve(),
  };
}
