import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { PdfDocument } from "../../src/ocr/pdf-document";
import { PDFDocument, popGraphicsState, pushGraphicsState, concatTransformationMatrix, drawObject } from "pdf-lib";
import { renderTextGrey, seededRandom, wrap } from "./text-render";

/**
 * The OCR corpus of bench/media/ocr-corpus (its README names every source, licence and ground truth):
 * the committed files as they are, plus what is made from them here, the same on every run: renders of a
 * real PDF page at 96, 150 and 300 DPI (the project's own pdf.js rendering), Russian texts rendered at
 * the same resolutions, a phone-photo-like page, a speckled scan, 150 DPI grey scans in PDFs, a two-page
 * TIFF, bilevel magazine pages.
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

const LETTER_300DPI = { width: 2550, height: 3300 };
const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * A magazine page as a 300 DPI bilevel scan (the UNLV-ISRI kind): a headline over two columns of 11 pt
 * DejaVu Serif that wrap round a halftoned photo (`photo`: its box in px), thresholded to 1 bit. Lines are
 * wrapped by a width per character that DejaVu Serif's text stays inside. Returns the 1-bit pixels (0 or
 * 255) and the text in reading order: the headline, then the first column, then the second.
 */
async function magazinePage(article: string, photo: { left: number; top: number; width: number; height: number }, seed: number) {
  const [headline = "", ...paragraphs] = article.split("\n");
  const { width, height } = LETTER_300DPI;
  const margin = 150;
  const gutter = 75;
  const column = (width - 2 * margin - gutter) / 2;
  const fontSize = (11 / 72) * 300;
  const lineHeight = Math.round(fontSize * 1.25);
  const charWidth = fontSize * 0.6;
  const pad = 40;
  const top = margin + 160;
  const lines: { x: number; y: number; text: string }[] = [];
  // The room on a text line at baseline y of a column: the column less the photo (and its padding) where they overlap.
  const room = (left: number, y: number): { x: number; width: number } => {
    const right = left + column;
    const overlaps = y + fontSize * 0.3 > photo.top - pad && y - fontSize < photo.top + photo.height + pad;
    if (!overlaps || photo.left - pad >= right || photo.left + photo.width + pad <= left) return { x: left, width: column };
    const before = photo.left - pad - left;
    const after = right - (photo.left + photo.width + pad);
    return before >= after ? { x: left, width: Math.max(0, before) } : { x: photo.left + photo.width + pad, width: after };
  };
  let col = 0;
  let y = top + fontSize;
  const advance = () => {
    y += lineHeight;
    if (y > height - margin) {
      col++;
      y = top + fontSize;
    }
  };
  for (const paragraph of paragraphs) {
    const words = paragraph.split(/\s+/).filter(Boolean);
    while (words.length > 0) {
      const box = room(margin + col * (column + gutter), y);
      const capacity = Math.floor(box.width / charWidth);
      let line = "";
      while (words.length > 0 && (line ? line.length + 1 : 0) + words[0]!.length <= capacity) line = line ? `${line} ${words.shift()!}` : words.shift()!;
      if (line) lines.push({ x: box.x, y, text: line });
      advance();
    }
    y += Math.round(lineHeight * 0.4);
  }
  const random = seededRandom(seed);
  const blobs = Array.from({ length: 6 }, () => ({ cx: random(), cy: random(), r: 0.15 + random() * 0.25, shade: Math.round(random() * 200) }));
  const picture =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${photo.width}" height="${photo.height}">` +
    `<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#e8e8e8"/><stop offset="1" stop-color="#404040"/></linearGradient></defs>` +
    `<rect width="100%" height="100%" fill="url(#g)"/>` +
    blobs
      .map((b) => `<circle cx="${b.cx * photo.width}" cy="${b.cy * photo.height}" r="${b.r * photo.width}" fill="rgb(${b.shade},${b.shade},${b.shade})"/>`)
      .join("") +
    `</svg>`;
  const grey = await sharp(Buffer.from(picture)).blur(6).greyscale().raw().toBuffer();
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<text x="${margin}" y="${margin + 80}" font-family="DejaVu Sans" font-weight="bold" font-size="${(24 / 72) * 300}">${escapeXml(headline)}</text>` +
    `<g font-family="DejaVu Serif" font-size="${fontSize}" fill="#000000">` +
    lines.map((l) => `<text x="${l.x}" y="${l.y}" xml:space="preserve">${escapeXml(l.text)}</text>`).join("") +
    `</g></svg>`;
  const page = await sharp(Buffer.from(svg)).flatten({ background: "#ffffff" }).greyscale().raw().toBuffer();
  // A 45-degree clustered-dot halftone screen (~70 lines per inch), as printed photos scan in 1 bit.
  const period = 300 / 70 / Math.SQRT1_2;
  for (let py = 0; py < photo.height; py++) {
    for (let px = 0; px < photo.width; px++) {
      const u = ((px + py) * Math.SQRT1_2 * 2 * Math.PI) / period;
      const v = ((px - py) * Math.SQRT1_2 * 2 * Math.PI) / period;
      const threshold = 127.5 * (1 + Math.cos(u) * Math.cos(v) * 0.98);
      page[(photo.top + py) * width + photo.left + px] = grey[py * photo.width + px]! < threshold ? 0 : 255;
    }
  }
  for (let i = 0; i < page.length; i++) page[i] = page[i]! < 128 ? 0 : 255;
  return { pixels: page, width, height, text: [headline, ...lines.map((l) => l.text)].join("\n") };
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
 * A one-page PDF whose only content is one DeviceGray image drawn at its true size at `dpi`, as a scanner
 * writes it: 1-bit pixels (0 or 255) packed and Flate-compressed, or a greyscale JPEG kept as it is (DCTDecode).
 */
async function scannerPdf(image: { bilevel: { pixels: Buffer } } | { jpeg: Buffer }, width: number, height: number, dpi: number): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const fixed = new Date("2025-03-15T10:30:00Z");
  pdf.setCreationDate(fixed);
  pdf.setModificationDate(fixed);
  const dict = { Type: "XObject", Subtype: "Image", Width: width, Height: height, ColorSpace: "DeviceGray" };
  const stream =
    "jpeg" in image
      ? pdf.context.stream(image.jpeg, { ...dict, BitsPerComponent: 8, Filter: "DCTDecode" })
      : pdf.context.flateStream(packBits(image.bilevel.pixels, width, height), { ...dict, BitsPerComponent: 1 });
  const size = { width: (width * 72) / dpi, height: (height * 72) / dpi };
  const pdfPage = pdf.addPage([size.width, size.height]);
  const name = pdfPage.node.newXObject("Scan", pdf.context.register(stream));
  pdfPage.pushOperators(pushGraphicsState(), concatTransformationMatrix(size.width, 0, 0, size.height, 0, 0), drawObject(name), popGraphicsState());
  return Buffer.from(await pdf.save());
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
      data: await scannerPdf({ jpeg: scan.jpeg }, scan.width, scan.height, 150),
      expected: lines.join("\n"),
      pages: 1,
      plain: { data: scan.jpeg, mimeType: "image/jpeg" },
    });
  }
  const article = text("magazine-en.txt");
  const magazines = [
    { name: "magazine-en bilevel scan, photo across the columns", photo: { left: 850, top: 1150, width: 850, height: 900 } },
    { name: "magazine-en bilevel scan, photo in the right column", photo: { left: 1350, top: 500, width: 700, height: 800 } },
  ];
  for (const [i, magazine] of magazines.entries()) {
    const page = await magazinePage(article, magazine.photo, 17 + i);
    const png = await bilevelPng(page);
    docs.push({
      name: `${magazine.name} (300 DPI, 1 bit)`,
      kind: "bilevel scan",
      language: "en",
      mimeType: "image/png",
      data: png,
      expected: page.text,
      pages: 1,
    });
    if (i === 0) {
      const pdf = await scannerPdf({ bilevel: page }, page.width, page.height, 300);
      const plain = { data: png, mimeType: "image/png" };
      docs.push({
        name: `${magazine.name}, in a PDF`,
        kind: "bilevel scan",
        language: "en",
        mimeType: "application/pdf",
        data: pdf,
        expected: page.text,
        pages: 1,
        plain,
      });
    }
  }
  return docs;
}
