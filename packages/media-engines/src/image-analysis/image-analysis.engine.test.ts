import sharp from "sharp";
import { fixture } from "../../test/support/fixtures";
import { LimitExceededError, UnsupportedMediaTypeError } from "../errors";
import type { Progress } from "../provider";
import { createLocalImageAnalysisEngine, type ImageAnalysisDocument } from "./image-analysis.engine";
import { hammingDistance } from "./image-measures";

const engine = createLocalImageAnalysisEngine({ limits: { maxFiles: 3 } });

async function analyse(...files: { data: Buffer; mimeType: string }[]) {
  const progress: Progress[] = [];
  const result = await engine.run({ files, settings: {} }, { onProgress: (p) => progress.push(p) });
  return { result, progress, document: JSON.parse(result.data.toString("utf8")) as ImageAnalysisDocument };
}

describe("image analysis", () => {
  test("size, format, orientation and EXIF of a camera JPEG", async () => {
    const { file, expected } = fixture("exif.jpg");
    const { document, result } = await analyse(file);
    expect(result).toMatchObject({ unit: "image", quantity: 1, mimeType: "application/json" });
    expect(document.images[0]).toMatchObject({
      file_index: 0,
      format: "jpeg",
      width: expected.width,
      height: expected.height,
      stored_width: expected.stored_width,
      stored_height: expected.stored_height,
      orientation: 6,
      size_bytes: file.data.length,
      exif: { ...expected.exif, DateTimeOriginal: "2025-03-15T10:30:00" },
    });
  });

  test("dominant colours: the white page, the red disc and the blue box, most frequent first", async () => {
    const { document } = await analyse(fixture("exif.jpg").file);
    const colours = document.images[0]!.dominant_colors;
    expect(colours[0]!.hex).toBe("#ffffff");
    const [r, g, b] = colours[1]!.rgb;
    expect(r).toBeGreaterThan(180);
    expect(g + b).toBeLessThan(140);
    expect(colours.some((c) => c.rgb[2] > 150 && c.rgb[0] < 80)).toBe(true);
    expect(colours.reduce((sum, c) => sum + c.share, 0)).toBeLessThanOrEqual(1);
  });

  test("a blurred copy scores lower on sharpness and keeps (almost) the same perceptual hash", async () => {
    const { file } = fixture("english.png");
    const blurred = { data: await sharp(file.data).blur(6).png().toBuffer(), mimeType: "image/png" };
    const other = fixture("exif.jpg").file;
    const { document, progress } = await analyse(file, blurred, other);
    const [sharpImage, blurredImage, otherImage] = document.images;
    expect(sharpImage!.sharpness.blurry).toBe(false);
    expect(blurredImage!.sharpness.laplacian_variance).toBeLessThan(sharpImage!.sharpness.laplacian_variance / 10);
    expect(blurredImage!.sharpness.blurry).toBe(true);
    expect(sharpImage!.dhash).toMatch(/^[0-9a-f]{16}$/);
    expect(hammingDistance(sharpImage!.dhash, blurredImage!.dhash)).toBeLessThanOrEqual(10);
    expect(hammingDistance(sharpImage!.dhash, otherImage!.dhash)).toBeGreaterThan(hammingDistance(sharpImage!.dhash, blurredImage!.dhash));
    expect(progress.at(-1)).toEqual({ done: 3, total: 3, unit: "image" });
  });

  test("an image without EXIF has exif null", async () => {
    const { document } = await analyse(fixture("english.png").file);
    expect(document.images[0]).toMatchObject({ exif: null, orientation: null, width: 1400, height: 400, format: "png" });
  });

  test("quantity is the number of images; limits and types are checked at measure", async () => {
    const png = fixture("english.png").file;
    await expect(engine.measure({ files: [png, png], settings: {} })).resolves.toEqual({ unit: "image", quantity: 2 });
    await expect(engine.measure({ files: [png, png, png, png], settings: {} })).rejects.toBeInstanceOf(LimitExceededError);
    await expect(engine.measure({ files: [fixture("scanned.pdf").file], settings: {} })).rejects.toBeInstanceOf(UnsupportedMediaTypeError);
  });
});
