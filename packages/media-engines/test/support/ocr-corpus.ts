import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { PdfDocument } from "../../src/ocr/pdf-document";
import { renderTextGrey, seededRandom, wrap } from "./text-render";

/**
 * The OCR corpus of bench/media/ocr-corpus (its README names every source, licence and ground truth):
 * the committed files as they are, plus what is made from them here, the same on every run: renders of a
 * real PDF page at 96, 150 and 300 DPI (the project's own pdf.js rendering), Russian texts rendered at
 * the same resolutions, a phone-photo-like page, a speckled scan, a two-page TIFF.
 */
export const OCR_CORPUS_DIR = path.resolve(__dirname, "../../../../bench/media/ocr-corpus");

export interface CorpusDocument {
  name: string;
  /** What kind of input it stands for: screenshot, render, photo, scan, gif, tiff. */
  kind: string;
  language: "en" | "ru";
  mimeType: string;
  data: Buffer;
  /** The text on the page(s), pages joined by a line break. */
  expected: string;
  pages: number;
}

const A4_INCHES = { width: 8.27, height: 11.69 };

const read = (name: string) => readFileSync(path.join(OCR_CORPUS_DIR, name));
const text = (name: string) => readFileSync(path.join(OCR_CORPUS_DIR, name), "utf8").trim();

/** A4 page of `lines` in 12 pt DejaVu Sans at `dpi`, as a PNG that says its resolution. */
async function a4Render(lines: readonly string[], dpi: number): Promise<{ grey: Buffer; width: number; height: number; png: Buffer }> {
  const px = (inches: number) => Math.round(inches * dpi);
  const fontSize = (12 / 72) * dpi;
  const rendered = await renderTextGrey({
    lines,
    width: px(A4_INCHES.width),
    height: px(A4_INCHES.height),
    fontSize,
    lineHeight: fontSize * 1.5,
    margin: px(0.8),
  });
  const png = await sharp(rendered.data, { raw: { width: rendered.width, height: rendered.height, channels: 1 } })
    .withMetadata({ density: dpi })
    .png()
    .toBuffer();
  return { grey: rendered.data, width: rendered.width, height: rendered.height, png };
}

/**
 * A phone photo of a printed page: a 300 DPI render turned by 1.5 degrees, lit unevenly (a grey paper
 * darker towards one corner), softened by the lens, scaled to ~165 DPI, with sensor noise, as a JPEG
 * whose header says 72 DPI (what phones write).
 */
async function phonePhoto(lines: readonly string[], seed: number): Promise<Buffer> {
  const page = await a4Render(lines, 300);
  const { data, info } = await sharp(page.grey, { raw: { width: page.width, height: page.height, channels: 1 } })
    .rotate(1.5, { background: "#ffffff" })
    .blur(1.2)
    .resize({ width: Math.round(A4_INCHES.width * 165) })
    .extractChannel(0)
    .raw()
    .toBuffer({ resolveWithObject: true });
  const random = seededRandom(seed);
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      const i = y * info.width + x;
      const light = 0.95 - 0.3 * ((x / info.width + y / info.height) / 2);
      data[i] = Math.max(0, Math.min(255, Math.round(30 + (data[i]! - 30) * light * 0.92 + (random() - 0.5) * 16)));
    }
  }
  return sharp(data, { raw: { width: info.width, height: info.height, channels: 1 } })
    .jpeg({ quality: 80 })
    .withMetadata({ density: 72 })
    .toBuffer();
}

/** A 300 DPI scan with 3 % salt-and-pepper speckle. */
async function speckledScan(lines: readonly string[], seed: number): Promise<Buffer> {
  const page = await a4Render(lines, 300);
  const random = seededRandom(seed);
  const grey = Buffer.from(page.grey);
  for (let i = 0; i < grey.length; i++) if (random() < 0.03) grey[i] = random() < 0.5 ? 0 : 255;
  return sharp(grey, { raw: { width: page.width, height: page.height, channels: 1 } })
    .withMetadata({ density: 300 })
    .png()
    .toBuffer();
}

/** A real PDF page rendered on white at `dpi` by pdf.js, as a PNG that says its resolution. */
async function pdfRender(pdf: PdfDocument, page: number, dpi: number): Promise<Buffer> {
  const raster = await pdf.render(page, dpi, 100_000_000);
  return sharp(raster.data, { raw: { width: raster.width, height: raster.height, channels: 4 } })
    .flatten({ background: "#ffffff" })
    .greyscale()
    .withMetadata({ density: dpi })
    .png()
    .toBuffer();
}

/** Two images as the pages of one TIFF (the second padded with white to the first's size). */
async function twoPageTiff(first: Buffer, second: Buffer): Promise<Buffer> {
  const a = await sharp(first).flatten({ background: "#ffffff" }).greyscale().raw().toBuffer({ resolveWithObject: true });
  const b = await sharp(second)
    .flatten({ background: "#ffffff" })
    .greyscale()
    .resize({ width: a.info.width, height: a.info.height, fit: "contain", position: "left top", background: "#ffffff" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const stacked = Buffer.concat([a.data.subarray(0, a.info.width * a.info.height), b.data.subarray(0, a.info.width * a.info.height)]);
  return sharp(stacked, { raw: { width: a.info.width, height: a.info.height * 2, channels: 1, pageHeight: a.info.height } })
    .tiff({ compression: "lzw" })
    .toBuffer();
}

export async function loadOcrCorpus(): Promise<CorpusDocument[]> {
  const docs: CorpusDocument[] = [];
  const image = (name: string, kind: string, mimeType: string, truth: string) =>
    docs.push({ name, kind, language: "en", mimeType, data: read(name), expected: text(truth), pages: 1 });
  image("bill.png", "screenshot", "image/png", "bill.txt");
  image("testocr.png", "screenshot", "image/png", "testocr.txt");
  image("cosmic.png", "screenshot", "image/png", "cosmic.txt");
  image("simple.gif", "gif", "image/gif", "simple.txt");
  docs.push({
    name: "testocr+simple.tif (2 pages)",
    kind: "tiff",
    language: "en",
    mimeType: "image/tiff",
    data: await twoPageTiff(read("testocr.png"), read("simple.png")),
    expected: `${text("testocr.txt")}\n${text("simple.txt")}`,
    pages: 2,
  });

  const pdf = await PdfDocument.open(read("tam-review-p1.pdf"));
  try {
    const truth = await pdf.pageText(1);
    for (const dpi of [96, 150, 300]) {
      docs.push({
        name: `tam-review-p1.pdf @ ${dpi} DPI`,
        kind: `render ${dpi} DPI`,
        language: "en",
        mimeType: "image/png",
        data: await pdfRender(pdf, 1, dpi),
        expected: truth,
        pages: 1,
      });
    }
  } finally {
    await pdf.destroy();
  }

  const constitution = text("constitution-ru.txt")
    .split("\n")
    .flatMap((line) => wrap(line, 72));
  const form = text("form-ru.txt")
    .split("\n")
    .flatMap((line) => wrap(line, 72));
  for (const dpi of [96, 150, 300]) {
    docs.push({
      name: `constitution-ru @ ${dpi} DPI`,
      kind: `render ${dpi} DPI`,
      language: "ru",
      mimeType: "image/png",
      data: (await a4Render(constitution, dpi)).png,
      expected: constitution.join("\n"),
      pages: 1,
    });
  }
  docs.push({
    name: "form-ru @ 150 DPI",
    kind: "render 150 DPI",
    language: "ru",
    mimeType: "image/png",
    data: (await a4Render(form, 150)).png,
    expected: form.join("\n"),
    pages: 1,
  });
  docs.push({
    name: "form-ru phone photo (~165 DPI, JPEG says 72)",
    kind: "photo",
    language: "ru",
    mimeType: "image/jpeg",
    data: await phonePhoto(form, 7),
    expected: form.join("\n"),
    pages: 1,
  });
  docs.push({
    name: "form-ru speckled scan (300 DPI, 3 %)",
    kind: "scan",
    language: "ru",
    mimeType: "image/png",
    data: await speckledScan(form, 11),
    expected: form.join("\n"),
    pages: 1,
  });
  docs.push({
    name: "constitution-ru speckled scan (300 DPI, 3 %)",
    kind: "scan",
    language: "ru",
    mimeType: "image/png",
    data: await speckledScan(constitution, 13),
    expected: constitution.join("\n"),
    pages: 1,
  });
  return docs;
}
