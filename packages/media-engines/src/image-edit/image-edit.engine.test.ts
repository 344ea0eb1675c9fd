import { crc32, deflateSync } from "node:zlib";
import sharp from "sharp";
import { fixture } from "../../test/support/fixtures";
import { EngineAbortedError, InvalidInputError, LimitExceededError, UnsupportedMediaTypeError } from "../errors";
import type { InputFile, Progress } from "../provider";
import { parseEditPrompt } from "./edit-grammar";
import { createLocalImageEditEngine, planSizes } from "./image-edit.engine";

const engine = createLocalImageEditEngine();

async function edit(file: InputFile, prompt: string) {
  const result = await engine.run({ file, plan: parseEditPrompt(prompt) });
  return { result, meta: await sharp(result.data).metadata() };
}

/** A PNG whose header claims `width` x `height` pixels, with almost no image data: a decompression-bomb stand-in. */
function pngHeaderOnly(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(Buffer.alloc(64))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

describe("image edit", () => {
  beforeAll(() => engine.warmUp());

  test("is billed one request, whatever the plan", async () => {
    await expect(engine.measure({ file: fixture("english.png").file, plan: parseEditPrompt("rotate 90") })).resolves.toEqual({ unit: "request", quantity: 1 });
  });

  test("a 90° rotation swaps the dimensions", async () => {
    const { result, meta } = await edit(fixture("english.png").file, "rotate 90");
    expect([meta.width, meta.height]).toEqual([400, 1400]);
    expect(result).toMatchObject({ unit: "request", quantity: 1, mimeType: "image/png", filename: "edited.png" });
  });

  test("EXIF orientation is applied first: the rotation acts on the image as displayed", async () => {
    // Stored 640x480 with orientation 6 (displayed 480x640); rotated 90 it is 640x480 and upright.
    const { meta } = await edit(fixture("exif.jpg").file, "повернуть на 90");
    expect([meta.width, meta.height]).toEqual([640, 480]);
    expect(meta.orientation ?? 1).toBe(1);
  });

  test("steps run in the order given: rotate then resize to width", async () => {
    const { meta } = await edit(fixture("english.png").file, "rotate 90, resize to width 200");
    expect([meta.width, meta.height]).toEqual([200, 700]);
  });

  test("resize, crop, format and quality", async () => {
    const png = fixture("english.png").file;
    expect((await edit(png, "resize to 50%")).meta).toMatchObject({ width: 700, height: 200 });
    expect((await edit(png, "resize to 700x700")).meta).toMatchObject({ width: 700, height: 200 });
    expect((await edit(png, "resize to exactly 300x300")).meta).toMatchObject({ width: 300, height: 300 });
    expect((await edit(png, "crop 100x50 at 10,20")).meta).toMatchObject({ width: 100, height: 50 });
    expect((await edit(png, "crop to square")).meta).toMatchObject({ width: 400, height: 400 });
    const { result, meta } = await edit(png, "обрезать до 5000x100, конвертировать в jpeg, качество 50");
    expect(meta).toMatchObject({ format: "jpeg", width: 1400, height: 100 });
    expect(result).toMatchObject({ mimeType: "image/jpeg", filename: "edited.jpg" });
    expect((await edit(png, "webp")).result.mimeType).toBe("image/webp");
  });

  test("colour steps change the pixels as named", async () => {
    const photo = fixture("exif.jpg").file;
    const stats = async (prompt: string) => (await sharp((await edit(photo, prompt)).result.data).stats()).channels.map((c) => c.mean);
    const [r0, g0, b0] = await stats("quality 95");
    const [r, g, b] = await stats("grayscale, sepia");
    expect(r!).toBeGreaterThan(b! + 20);
    expect(g!).toBeGreaterThan(b!);
    const [ri] = await stats("invert");
    expect(ri!).toBeCloseTo(255 - r0!, -1);
    const [rb, gb, bb] = await stats("brightness -50%");
    expect(rb! + gb! + bb!).toBeLessThan((r0! + g0! + b0!) * 0.7);
    const grey = await sharp((await edit(photo, "black and white")).result.data).stats();
    expect(grey.channels.length === 1 || Math.abs(grey.channels[0]!.mean - grey.channels[2]!.mean) < 1).toBe(true);
  });

  test("reports progress per step", async () => {
    const progress: Progress[] = [];
    await engine.run({ file: fixture("english.png").file, plan: parseEditPrompt("rotate 90, flip, blur") }, { onProgress: (p) => progress.push(p) });
    expect(progress).toEqual([0, 1, 2, 3].map((done) => ({ done, total: 3, unit: "step" })));
  });

  test("a crop that starts outside the image fails the run with invalid_input", async () => {
    await expect(engine.run({ file: fixture("english.png").file, plan: parseEditPrompt("crop 100x100 at 2000,10") })).rejects.toBeInstanceOf(InvalidInputError);
  });

  test("output size is capped", async () => {
    expect(() => planSizes(parseEditPrompt("resize to exactly 10000x10000"), { width: 100, height: 100 })).toThrow(LimitExceededError);
    await expect(engine.run({ file: fixture("english.png").file, plan: parseEditPrompt("resize to 1000%") })).rejects.toMatchObject({
      code: "payload_too_large",
      limit: "output_pixels",
    });
  });

  test("a decompression bomb is refused from its header, before decoding", async () => {
    const bomb = { data: pngHeaderOnly(50_000, 50_000), mimeType: "image/png" };
    await expect(engine.run({ file: bomb, plan: parseEditPrompt("rotate 90") })).rejects.toMatchObject({ code: "payload_too_large", limit: "pixels" });
  });

  test("an image that does not decode fails with invalid_input", async () => {
    const broken = { data: Buffer.from("not an image at all"), mimeType: "image/png" };
    await expect(engine.run({ file: broken, plan: parseEditPrompt("rotate 90") })).rejects.toBeInstanceOf(InvalidInputError);
  });

  test("only images are accepted", async () => {
    await expect(engine.measure({ file: fixture("text-layer.pdf").file, plan: parseEditPrompt("rotate 90") })).rejects.toBeInstanceOf(
      UnsupportedMediaTypeError,
    );
  });

  test("an aborted run stops", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(engine.run({ file: fixture("english.png").file, plan: parseEditPrompt("rotate 90") }, { signal: controller.signal })).rejects.toBeInstanceOf(
      EngineAbortedError,
    );
  });
});
