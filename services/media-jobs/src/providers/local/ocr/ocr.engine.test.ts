/** @jest-environment ./services/media-jobs/test/support/native-esm.environment.mjs */
import { ensureTesseract } from "@meter/local-infra";
import sharp from "sharp";
import { characterErrorRate } from "../../../../test/support/cer";
import { fixture, type FixtureName } from "../../../../test/support/fixtures";
import { passwordProtectedPdf } from "../../../../test/support/generated-inputs";
import { EngineAbortedError, LimitExceededError, QuantityUnknownError, UnsupportedMediaTypeError } from "../../errors";
import type { OcrResultDocument, OcrSettings, Progress } from "../../provider";
import { createLocalOcrEngine } from "./ocr.engine";
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

  test("an image-only PDF is rendered and recognised", async () => {
    const { file } = fixture("scanned.pdf");
    await expect(engine.measure({ files: [file], settings: {} })).resolves.toEqual({ unit: "page", quantity: 2 });
    const { document, expected } = await ocr("scanned.pdf", { language: "en" });
    expect(document).toMatchObject({ page_count: 2, ocr_page_count: 2, text_layer_page_count: 0 });
    document.pages.forEach((page, i) => {
      expect(page).toMatchObject({ source: "ocr", page: i + 1 });
      expect(page.width_px).toBeGreaterThan(2400);
      expect(characterErrorRate(page.text, expected.pages![i]!)).toBeLessThan(0.02);
    });
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
