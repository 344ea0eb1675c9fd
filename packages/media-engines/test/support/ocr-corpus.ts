import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { PdfDocument } from "../../src/ocr/pdf-document";
import { PDFDocument, popGraphicsState, pushGraphicsState, concatTransformationMatrix, drawObject } from "pdf-lib";
import { letterheadPage, magazinePage, newsletterPage, reportPage, type PageImage } from "./illustrated-pages";
import { renderTextGrey, seededRandom, wrap } from "./text-render";

/**
 * The OCR corpus of bench/media/ocr-corpus (its README names every source, licence and ground truth):
 * the committed files as they are, plus what is made from them here, the same on every run: renders of a
 * real PDF page at 96, 150 and 300 DPI (the project's own pdf.js rendering), Russian texts rendered at
 * the same resolutions, a phone-photo-like page, a speckled scan, 150 DPI grey scans in PDFs, a two-page
 * TIFF, and pages with pictures (illustrated-pages.ts): bilevel magazine pages round a photo, also in a
 * two-page PDF, a photo with its caption, a chart with its labels, a phone photo of a letterhead.
 */
export const OCR_CORPUS_DIR = path.resolve(__dirname, "../../../../bench/media/ocr-corpus");

export interface CorpusDocument {
  name: string;
  /** What kind of input it stands for: screenshot, render, photo, scan, bilevel scan, gif, tiff. */
  kind: string;
  language: "en" | "ru";
  mimeType: string;
  data: Buffer;
  /** The text on the page(s), pages joined by a line break. */
  expected: string;
  pages: number;
  /** What plain `tesseract` reads instead of `data` when it cannot read that (a PDF: the image it holds). */
  plain?: { data: Buffer; mimeType: string };
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
 * A phone photo of a printed page: its 300 DPI render turned by 1.5 degrees, lit unevenly (a grey paper
 * darker towards one corner), softened by the lens, scaled to ~165 DPI, with sensor noise, as a JPEG
 * whose header says 72 DPI (what phones write).
 */
async function phonePhoto(page: { grey: Buffer; width: number; height: number }, seed: number): Promise<Buffer> {
  const { data, info } = await sharp(page.grey, { raw: { width: page.width, height: page.height, channels: 1 } })
    .rotate(1.5, { background: "#ffffff" })
    .blur(1.2)
    .resize({ width: Math.round((page.width / 300) * 165) })
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

/** Grey pixels as a PNG that says its resolution. */
function greyPng(page: PageImage, dpi: number): Promise<Buffer> {
  return sharp(page.pixels, { raw: { width: page.width, height: page.height, channels: 1 } })
    .withMetadata({ density: dpi })
    .png()
    .toBuffer();
}

/** 1-bit pixels as a bilevel PNG that says 300 DPI. */
function bilevelPng(page: { pixels: Buffer; width: number; height: number }): Promise<Buffer> {
  return sharp(page.pixels, { raw: { width: page.width, height: page.height, channels: 1 } })
    .png({ palette: true, colours: 2 })
    .withMetadata({ density: 300 })
    .toBuffer();
}

/** 1-bit pixels (0 or 255), one byte each, packed eight to a byte as a PDF image holds them (1 = white). */
function packBits(pixels: Buffer, width: number, height: number): Buffer {
  const stride = Math.ceil(width / 8);
  const packed = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) if (pixels[y * width + x]! !== 0) packed[y * stride + (x >> 3)]! |= 0x80 >> (x & 7);
  }
  return packed;
}

/**
 * A PDF whose pages each hold one DeviceGray image drawn at its true size at `dpi`, as a scanner writes
 * it: 1-bit pixels (0 or 255) packed and Flate-compressed, or a greyscale JPEG kept as it is (DCTDecode).
 */
async function scannerPdf(pages: readonly (({ pixels: Buffer } | { jpeg: Buffer }) & { width: number; height: number })[], dpi: number): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const fixed = new Date("2025-03-15T10:30:00Z");
  pdf.setCreationDate(fixed);
  pdf.setModificationDate(fixed);
  for (const image of pages) {
    const { width, height } = image;
    const dict = { Type: "XObject", Subtype: "Image", Width: width, Height: height, ColorSpace: "DeviceGray" };
    const stream =
      "jpeg" in image
        ? pdf.context.stream(image.jpeg, { ...dict, BitsPerComponent: 8, Filter: "DCTDecode" })
        : pdf.context.flateStream(packBits(image.pixels, width, height), { ...dict, BitsPerComponent: 1 });
    const size = { width: (width * 72) / dpi, height: (height * 72) / dpi };
    const pdfPage = pdf.addPage([size.width, size.height]);
    const name = pdfPage.node.newXObject("Scan", pdf.context.register(stream));
    pdfPage.pushOperators(pushGraphicsState(), concatTransformationMatrix(size.width, 0, 0, size.height, 0, 0), drawObject(name), popGraphicsState());
  }
  return Buffer.from(await pdf.save());
}

/** Bilevel pages of one size as one multi-page TIFF (CCITT G4, as scanners write them) that says 300 DPI. */
function bilevelTiff(pages: readonly PageImage[]): Promise<Buffer> {
  const [first] = pages as [PageImage];
  return sharp(Buffer.concat(pages.map((p) => p.pixels)), {
    raw: { width: first.width, height: first.height * pages.length, channels: 1, pageHeight: first.height },
  })
    .toColourspace("b-w")
    .tiff({ compression: "ccittfax4", bitdepth: 1, xres: 300 / 25.4, yres: 300 / 25.4 })
    .toBuffer();
}

/**
 * An A4 page of `lines` at 150 DPI as a scanner saves it in grey: a one-channel JPEG (quality 85) whose
 * JFIF header says 150 DPI. Written by hand: sharp's density option adds an sRGB profile, and three channels.
 */
async function greyJpegScan(lines: readonly string[]): Promise<{ jpeg: Buffer; width: number; height: number }> {
  const page = await a4Render(lines, 150);
  const bare = await sharp(page.grey, { raw: { width: page.width, height: page.height, channels: 1 } })
    .toColourspace("b-w")
    .jpeg({ quality: 85 })
    .toBuffer();
  // APP0 after the start marker: "JFIF", version 1.1, units 1 (dots per inch), 150 x 150, no thumbnail.
  const jfif = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x01, 0x00, 150, 0x00, 150, 0x00, 0x00]);
  return { jpeg: Buffer.concat([bare.subarray(0, 2), jfif, bare.subarray(2)]), width: page.width, height: page.height };
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
    data: await phonePhoto(await a4Render(form, 300), 7),
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
  for (const [name, lines] of [
    ["form-ru", form],
    ["constitution-ru", constitution],
  ] as const) {
    const scan = await greyJpegScan(lines);
    docs.push({
      name: `${name} scanned PDF (one 150 DPI grey JPEG)`,
      kind: "grey scan in a PDF",
      language: "ru",
      mimeType: "application/pdf",
      data: await scannerPdf([scan], 150),
      expected: lines.join("\n"),
      pages: 1,
      plain: { data: scan.jpeg, mimeType: "image/jpeg" },
    });
  }
  // Pages with pictures: what is in a picture is not text, and none of it may be read as words.
  const article = text("magazine-en.txt");
  const across = await magazinePage(article, { left: 850, top: 1150, width: 850, height: 900, scene: "night" }, 17);
  const right = await magazinePage(article, { left: 1350, top: 500, width: 700, height: 800, scene: "shapes" }, 18);
  for (const [name, page] of [
    ["magazine-en bilevel scan, night photo across the columns (300 DPI, 1 bit)", across],
    ["magazine-en bilevel scan, photo in the right column (300 DPI, 1 bit)", right],
  ] as const) {
    docs.push({ name, kind: "bilevel scan", language: "en", mimeType: "image/png", data: await bilevelPng(page), expected: page.text, pages: 1 });
  }
  docs.push({
    name: "magazine-en bilevel scans in a PDF, two pages, the night photo on page 2",
    kind: "bilevel scan",
    language: "en",
    mimeType: "application/pdf",
    data: await scannerPdf([right, across], 300),
    expected: `${right.text}\n${across.text}`,
    pages: 2,
    plain: { data: await bilevelTiff([right, across]), mimeType: "image/tiff" },
  });
  const newsletter = await newsletterPage(
    text("newsletter-ru.txt"),
    "Первыми по новому мосту прошли ученики школы посёлка Каменка. Фото пресс-службы администрации района",
    200,
    23,
  );
  docs.push({
    name: "newsletter-ru, photo with a caption (200 DPI grey)",
    kind: "page with a picture",
    language: "ru",
    mimeType: "image/png",
    data: await greyPng(newsletter, 200),
    expected: newsletter.text,
    pages: 1,
  });
  const report = await reportPage(text("report-en.txt"), 150);
  docs.push({
    name: "report-en, bar chart with labels (150 DPI grey)",
    kind: "page with a picture",
    language: "en",
    mimeType: "image/png",
    data: await greyPng(report, 150),
    expected: report.text,
    pages: 1,
  });
  const letter = await letterheadPage(
    "ООО «Северный ветер»",
    "125009, г. Москва, ул. Тверская, д. 7, офис 12",
    text("letter-ru.txt")
      .split("\n")
      .flatMap((line) => wrap(line, 72)),
    300,
  );
  docs.push({
    name: "letter-ru phone photo, letterhead with a logo (~165 DPI, JPEG says 72)",
    kind: "page with a picture",
    language: "ru",
    mimeType: "image/jpeg",
    data: await phonePhoto({ grey: letter.pixels, width: letter.width, height: letter.height }, 29),
    expected: letter.text,
    pages: 1,
  });
  return docs;
}
