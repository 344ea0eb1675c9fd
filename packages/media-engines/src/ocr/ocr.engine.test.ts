/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { UploadMimeType } from "@meter/contracts";
import { ensureTesseract } from "@meter/local-infra";
import sharp from "sharp";
import { characterErrorRate } from "../../test/support/cer";
import { fixture, type FixtureName } from "../../test/support/fixtures";
import { passwordProtectedPdf } from "../../test/support/generated-inputs";
import { OCR_CORPUS_DIR } from "../../test/support/ocr-corpus";
import { renderTextGrey } from "../../test/support/text-render";
import { EngineAbortedError, LimitExceededError, QuantityUnknownError, UnsupportedMediaTypeError } from "../errors";
import type { OcrResultDocument, OcrSettings, Progress } from "../provider";
import { OCR_ACCEPTED_TYPES, createLocalOcrEngine } from "./ocr.engine";
import { TesseractPool } from "./tesseract-pool";

// Real Tesseract (installed with apt when missing, as npm test does), real sharp and pdf.js: nothing mocked.
const pool = new TesseractPool({ size: 2 });
const engine = createLocalOcrEngine({ limits: { maxFiles: 3, maxPagesPerDocument: 5 }, pool });

beforeAll(async () => {
  await ensureTesseract();
  await engine.warmUp();
}, 600_000);

afterAll(() => engine.close());

async function ocr(name: FixtureName, settings: OcrSettings = {}) {
  const { file, expected } = fixture(name);
  const progress: Progress[] = [];
  const result = await engine.run({ files: [file], settings }, { onProgress: (p) => progress.push(p) });
  return { result, expected, progress, document: JSON.parse(result.data.toString("utf8")) as OcrResultDocument };
}

describe("OCR of images", () => {
  test.each([
    ["english.png", "auto", "en"],
    ["english.png", "eng", "en"],
    ["russian.png", "auto", "ru"],
    ["russian.png", "ru", "ru"],
  ] as const)("%s with language %s reads the known text", async (name, language, detected) => {
    const { document, expected, result } = await ocr(name, { language });
    expect(result).toMatchObject({ unit: "page", quantity: 1, mimeType: "application/json" });
    expect(document.pages).toHaveLength(1);
    expect(document.pages[0]).toMatchObject({ source: "ocr", file_index: 0, page: 1, language: detected });
    expect(document.language).toBe(detected);
    expect(characterErrorRate(document.pages[0]!.text, expected.pages![0]!)).toBeLessThan(0.01);
    expect(document.pages[0]!.confidence).toBeGreaterThan(80);
  });

  test("a noisy scan is cleaned by the median filter before recognition", async () => {
    const { document, expected } = await ocr("noisy-scan.png");
    expect(characterErrorRate(document.pages[0]!.text, expected.pages![0]!)).toBeLessThan(0.02);
  });

  test.each([
    [1, 1],
    [2, 2],
    [2, 400],
  ])("a %ix%i image is a page with no text, not a failure", async (width, height) => {
    const data = await sharp({ create: { width, height, channels: 3, background: "#ffffff" } })
      .png()
      .toBuffer();
    const result = await engine.run({ files: [{ data, mimeType: "image/png" }], settings: {} });
    const document = JSON.parse(result.data.toString("utf8")) as OcrResultDocument;
    expect(result).toMatchObject({ unit: "page", quantity: 1 });
    expect(document.pages[0]).toMatchObject({ source: "ocr", text: "", width_px: width, height_px: height });
  });

  test("a page longer than Tesseract takes (40000 px) is scaled to fit and read, not failed as an engine fault", async () => {
    const data = await sharp({ create: { width: 40_000, height: 4, channels: 3, background: "#ffffff" } })
      .png()
      .toBuffer();
    const result = await engine.run({ files: [{ data, mimeType: "image/png" }], settings: {} });
    const document = JSON.parse(result.data.toString("utf8")) as OcrResultDocument;
    expect(document.pages[0]).toMatchObject({ source: "ocr", text: "", width_px: 40_000, height_px: 4 });
  });

  test("the image count is the billable quantity", async () => {
    const files = [fixture("english.png").file, fixture("russian.png").file];
    await expect(engine.measure({ files, settings: {} })).resolves.toEqual({ unit: "page", quantity: 2 });
  });
});

async function runOn(data: Buffer, mimeType: string, settings: OcrSettings = {}): Promise<OcrResultDocument> {
  const result = await engine.run({ files: [{ data, mimeType }], settings });
  return JSON.parse(result.data.toString("utf8")) as OcrResultDocument;
}

/** Lines of text rendered black on white, as a grey PNG with the given resolution tag (none: untagged). */
async function textPng(lines: string[], fontSize: number, density?: number): Promise<Buffer> {
  const page = await renderTextGrey({ lines, width: Math.round(fontSize * 36), fontSize });
  const image = sharp(page.data, { raw: { width: page.width, height: page.height, channels: 1 } });
  return (density === undefined ? image : image.withMetadata({ density })).png().toBuffer();
}

/**
 * A one-page PDF the size of `image` at `dpi` (a scanner's), drawing it over the whole page; `rectangle`
 * also draws a vector frame (a page mixing an image and other drawing); `rotate` sets the page's /Rotate.
 */
async function imagePdf(image: Buffer, dpi: number, options: { rectangle?: boolean; rotate?: number } = {}): Promise<Buffer> {
  const { PDFDocument, degrees } = await import("pdf-lib");
  const meta = await sharp(image).metadata();
  const pdf = await PDFDocument.create();
  const embedded = meta.format === "jpeg" ? await pdf.embedJpg(image) : await pdf.embedPng(image);
  const size = { width: (meta.width * 72) / dpi, height: (meta.height * 72) / dpi };
  const page = pdf.addPage([size.width, size.height]);
  page.drawImage(embedded, { x: 0, y: 0, ...size });
  if (options.rectangle) page.drawRectangle({ x: 10, y: 10, width: 40, height: 20, borderWidth: 1 });
  if (options.rotate) page.setRotation(degrees(options.rotate));
  return Buffer.from(await pdf.save());
}

describe("OCR of small text and screenshots", () => {
  test("a 96 DPI bank statement screenshot reads as well as plain Tesseract (5.7 %), not 37 % off after a median", async () => {
    const data = await readFile(path.join(OCR_CORPUS_DIR, "bill.png"));
    const expected = await readFile(path.join(OCR_CORPUS_DIR, "bill.txt"), "utf8");
    const document = await runOn(data, "image/png", { language: "en" });
    expect(document.text).toContain("99,914.15");
    expect(characterErrorRate(document.text, expected)).toBeLessThan(0.01);
  });
});

describe("the resolution Tesseract is told", () => {
  // A stand-in for the Tesseract worker that records each page's request (its size and resolution) and finds no text.
  let dir: string;
  let fake: ReturnType<typeof createLocalOcrEngine>;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "fake-tesseract-"));
    const script = path.join(dir, "worker.js");
    await writeFile(script, fakeWorker(path.join(dir, "calls")));
    fake = createLocalOcrEngine({
      limits: { maxFiles: 1, maxPagesPerDocument: 5 },
      pool: new TesseractPool({ size: 1, worker: { command: process.execPath, args: [script] } }),
    });
  });
  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The one page request of the last run: the page's size and the resolution Tesseract was told (0: none). */
  async function request(): Promise<{ width: number; height: number; dpi: number }> {
    const lines = (await readFile(path.join(dir, "calls"), "utf8")).trim().split("\n");
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as { width: number; height: number; dpi: number };
  }

  async function dpiArgument(density: number | undefined): Promise<string | undefined> {
    await rm(path.join(dir, "calls"), { force: true });
    const blank = sharp({ create: { width: 400, height: 300, channels: 3, background: "#ffffff" } });
    const data = await (density === undefined ? blank : blank.withMetadata({ density })).png().toBuffer();
    await fake.run({ files: [{ data, mimeType: "image/png" }], settings: { language: "en" } });
    const { dpi } = await request();
    return dpi === 0 ? undefined : String(dpi);
  }

  test.each([
    [96, "96"],
    [120, "120"],
    [600, "600"],
  ])("a page that says %i DPI is read at %s DPI, not an assumed 300", async (density, told) => {
    await expect(dpiArgument(density)).resolves.toBe(told);
  });

  test("a page with no resolution tag gets none, so Tesseract estimates it from the text as its CLI does", async () => {
    await expect(dpiArgument(undefined)).resolves.toBeUndefined();
  });

  test("a bilevel (1-bit) 300 DPI scan is read at its own size; the same page in grey is shrunk to its text size", async () => {
    const lines = Array.from({ length: 12 }, (_, i) => `Line ${i + 1} of a bilevel scan, twelve point text at 300 DPI.`);
    const page = await renderTextGrey({ lines, width: 1600, fontSize: 50 });
    const bilevel = Buffer.from(page.data.map((v) => (v < 128 ? 0 : 255)));
    const sizes: string[] = [];
    for (const pixels of [bilevel, page.data]) {
      await rm(path.join(dir, "calls"), { force: true });
      const data = await sharp(pixels, { raw: { width: page.width, height: page.height, channels: 1 } })
        .withMetadata({ density: 300 })
        .png()
        .toBuffer();
      await fake.run({ files: [{ data, mimeType: "image/png" }], settings: { language: "en" } });
      const { width, height } = await request();
      sizes.push(`${width} ${height}`);
    }
    expect(sizes[0]).toBe(`${page.width} ${page.height}`);
    expect(Number(sizes[1]!.split(" ")[0])).toBeLessThan(page.width * 0.8);
  });

  async function readPdf(pdf: Buffer): Promise<{ dpi: string | undefined; page: OcrResultDocument["pages"][number] }> {
    await rm(path.join(dir, "calls"), { force: true });
    const result = await fake.run({ files: [{ data: pdf, mimeType: "application/pdf" }], settings: { language: "en" } });
    const { dpi } = await request();
    const page = (JSON.parse(result.data.toString("utf8")) as OcrResultDocument).pages[0]!;
    return { dpi: dpi === 0 ? undefined : String(dpi), page };
  }

  const blankScan = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: "#ffffff" } })
      .jpeg()
      .toBuffer();

  test.each([
    [150, "150"],
    [200, "200"],
    [600, "600"],
  ])("a PDF page that is one %i DPI scan is read from the scan's own pixels at its resolution, not rendered at 300", async (dpi, told) => {
    const { dpi: argument, page } = await readPdf(await imagePdf(await blankScan(620, 200), dpi));
    expect(argument).toBe(told);
    expect(page).toMatchObject({ width_px: 620, height_px: 200 });
  });

  test("a scan on a page turned by /Rotate 90 is read upright (its width and height swapped)", async () => {
    const { dpi, page } = await readPdf(await imagePdf(await blankScan(620, 200), 150, { rotate: 90 }));
    expect(dpi).toBe("150");
    expect(page).toMatchObject({ width_px: 200, height_px: 620 });
  });

  test.each([
    [200, 200],
    [100, 150],
    [600, 400],
  ])("a page mixing a %i DPI image and vector drawing is rendered at %i DPI (its image's, within 150-400)", async (dpi, rendered) => {
    const { dpi: argument, page } = await readPdf(await imagePdf(await blankScan(600, 300), dpi, { rectangle: true }));
    expect(argument).toBe(String(rendered));
    expect(page.width_px).toBe(Math.floor((600 / dpi) * rendered));
  });
});

describe("one script per word with language auto", () => {
  const english = "HE MORE BENNETT EX TAXI COMPANY";
  const russian = "ООО Ромашка, ул. Ленина, дом 5";

  test.each([
    ["English capitals", [english]],
    ["a Russian address", [russian]],
    ["a page with both, one block each", [english, "", "", "", russian]],
  ])("%s: no word mixes Latin and Cyrillic, English stays Latin, Russian Cyrillic", async (_what, lines) => {
    const document = await runOn(await textPng(lines, 40, 300), "image/png", { language: "auto" });
    const words = document.text.split(/\s+/).filter(Boolean);
    expect(words.filter((w) => /\p{Script=Latin}/u.test(w) && /\p{Script=Cyrillic}/u.test(w))).toEqual([]);
    if (lines.includes(english)) expect(document.text).toContain("BENNETT");
    if (lines.includes(russian)) expect(document.text).toMatch(/ООО/);
    expect(document.text).not.toMatch(/OOO|НЕ MORE|ВЕММЕТТ/);
  });

  test("the bank statement screenshot: its EX marks stay Latin (eng+rus alone read them as Cyrillic ЕХ)", async () => {
    const document = await runOn(await readFile(path.join(OCR_CORPUS_DIR, "bill.png")), "image/png", { language: "auto" });
    expect(document.text).toContain("101,598.46 EX");
    expect(document.text).not.toMatch(/\p{Script=Cyrillic}/u);
  });
});

describe("every type the model lists", () => {
  test("is one that uploads accept", () => {
    for (const type of OCR_ACCEPTED_TYPES) expect(UploadMimeType.options).toContain(type);
  });

  test("a two-page TIFF is two pages, each read; a GIF is its first frame", async () => {
    const first = await renderTextGrey({ lines: ["The first page of the TIFF"], width: 1200, fontSize: 40 });
    const second = await renderTextGrey({ lines: ["Second page here"], width: 1200, height: first.height, fontSize: 40 });
    const stacked = Buffer.concat([first.data, second.data]);
    const tiff = await sharp(stacked, { raw: { width: 1200, height: first.height * 2, channels: 1, pageHeight: first.height } })
      .tiff()
      .toBuffer();
    const files = [{ data: tiff, mimeType: "image/tiff" }];
    await expect(engine.measure({ files, settings: {} })).resolves.toEqual({ unit: "page", quantity: 2 });
    const document = await runOn(tiff, "image/tiff", { language: "en" });
    expect(document.pages.map((p) => [p.page, p.text])).toEqual([
      [1, "The first page of the TIFF"],
      [2, "Second page here"],
    ]);

    const gif = await sharp(await textPng(["A GIF frame"], 40))
      .gif()
      .toBuffer();
    expect((await runOn(gif, "image/gif", { language: "en" })).text).toBe("A GIF frame");
  });
});

describe("OCR of PDFs", () => {
  test("a PDF with a text layer is read from it, page by page, without recognition", async () => {
    const { file } = fixture("text-layer.pdf");
    await expect(engine.measure({ files: [file], settings: {} })).resolves.toEqual({ unit: "page", quantity: 2 });
    const { document, expected, result, progress } = await ocr("text-layer.pdf");
    expect(result.quantity).toBe(2);
    expect(document).toMatchObject({ page_count: 2, ocr_page_count: 0, text_layer_page_count: 2, mean_confidence: null });
    expect(document.pages.map((p) => p.source)).toEqual(["text_layer", "text_layer"]);
    expect(document.pages.map((p) => p.text)).toEqual(expected.pages);
    expect(progress.at(-1)).toEqual({ done: 2, total: 2, unit: "page" });
  });

  test("an image-only PDF is recognised from its scans' own pixels", async () => {
    const { file } = fixture("scanned.pdf");
    await expect(engine.measure({ files: [file], settings: {} })).resolves.toEqual({ unit: "page", quantity: 2 });
    const { document, expected } = await ocr("scanned.pdf", { language: "en" });
    expect(document).toMatchObject({ page_count: 2, ocr_page_count: 2, text_layer_page_count: 0 });
    document.pages.forEach((page, i) => {
      expect(page).toMatchObject({ source: "ocr", page: i + 1 });
      // Each page's scan is 1654 px wide (200 DPI), not a 300 DPI render of the page (2480).
      expect(page.width_px).toBe(1654);
      expect(characterErrorRate(page.text, expected.pages![i]!)).toBeLessThan(0.02);
    });
  });

  test("a one-page PDF of a 150 DPI grey JPEG scan is read at 150 DPI: DELTA, not DELIA (its 300 DPI upsampling)", async () => {
    const page = await renderTextGrey({ lines: ["SCANNED PAGE DELTA 58"], width: 1240, height: 400, fontSize: 56, margin: 60 });
    const jpeg = await sharp(page.data, { raw: { width: page.width, height: page.height, channels: 1 } })
      .jpeg({ quality: 90 })
      .toBuffer();
    const document = await runOn(await imagePdf(jpeg, 150), "application/pdf", { language: "en" });
    expect(document.pages[0]).toMatchObject({ source: "ocr", text: "SCANNED PAGE DELTA 58", width_px: 1240, height_px: 400 });
  });

  test.each([
    ["not a PDF at all", Buffer.from("this is plain text, not a PDF")],
    ["a PDF header and garbage", Buffer.from("%PDF-1.7\n%\xff\xff\n1 0 obj << /Type /Garbage", "latin1")],
    ["an empty file", Buffer.alloc(0)],
  ])("%s: quantity unknown, before any work", async (_, data) => {
    const files = [{ data, mimeType: "application/pdf" }];
    const error = await engine.measure({ files, settings: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuantityUnknownError);
    expect(error).toMatchObject({ code: "cost_unknown", reason: "unreadable", fileIndex: 0 });
  });

  test("a password-protected PDF: quantity unknown, reason encrypted", async () => {
    const files = [fixture("english.png").file, { data: passwordProtectedPdf(), mimeType: "application/pdf" }];
    await expect(engine.measure({ files, settings: {} })).rejects.toMatchObject({ code: "cost_unknown", reason: "encrypted", fileIndex: 1 });
  });

  test("a PDF over the pages-per-document limit is refused at measure", async () => {
    const { PDFDocument } = await import("pdf-lib");
    const pdf = await PDFDocument.create();
    for (let i = 0; i < 6; i++) pdf.addPage([100, 100]);
    const files = [{ data: Buffer.from(await pdf.save()), mimeType: "application/pdf" }];
    await expect(engine.measure({ files, settings: {} })).rejects.toMatchObject({ code: "payload_too_large", limit: "pages", max: 5, actual: 6 });
  });
});

describe("OCR input rules", () => {
  test("an input type the model does not take", async () => {
    const files = [{ data: Buffer.from("hello"), mimeType: "text/plain" }];
    await expect(engine.measure({ files, settings: {} })).rejects.toBeInstanceOf(UnsupportedMediaTypeError);
  });

  test("more files than the model takes", async () => {
    const { file } = fixture("english.png");
    await expect(engine.measure({ files: [file, file, file, file], settings: {} })).rejects.toBeInstanceOf(LimitExceededError);
  });

  test("an image that does not decode fails the whole run with invalid_input", async () => {
    const files = [fixture("english.png").file, { data: Buffer.from("not a PNG"), mimeType: "image/png" }, fixture("russian.png").file];
    await expect(engine.run({ files, settings: {} })).rejects.toMatchObject({ code: "invalid_input" });
  });

  test("a run aborted through its signal stops with EngineAbortedError", async () => {
    const { file } = fixture("scanned.pdf");
    const controller = new AbortController();
    const run = engine.run(
      { files: [file], settings: {} },
      {
        signal: controller.signal,
        // Aborts as soon as the run announces its pages, before any page is recognised.
        onProgress: (p) => p.done === 0 && controller.abort(),
      },
    );
    await expect(run).rejects.toBeInstanceOf(EngineAbortedError);
  });
});

/**
 * A Tesseract worker stand-in (tesseract-worker-source.ts' protocol) in plain Node: it appends each
 * request's JSON line to `calls`, skips the pixels and answers an empty page.
 */
function fakeWorker(calls: string): string {
  return `
const { appendFileSync } = require("node:fs");
process.stdout.write(JSON.stringify({ version: "fake", languages: ["eng", "rus"], tessdata: "" }) + "\\n");
let buffered = Buffer.alloc(0);
let skip = -1;
process.stdin.on("data", (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  for (;;) {
    if (skip >= 0) {
      const taken = Math.min(skip, buffered.length);
      buffered = buffered.subarray(taken);
      skip -= taken;
      if (skip > 0) return;
      skip = -1;
      process.stdout.write(JSON.stringify({ bytes: 0 }) + "\\n");
    }
    const end = buffered.indexOf(10);
    if (end < 0) return;
    const line = buffered.subarray(0, end).toString();
    buffered = buffered.subarray(end + 1);
    appendFileSync(${JSON.stringify(calls)}, line + "\\n");
    skip = JSON.parse(line).bytes;
  }
});
`;
}
