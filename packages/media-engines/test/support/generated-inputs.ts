import { readFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument, StandardFonts } from "pdf-lib";
import sharp from "sharp";
import type { PageImage } from "../../src/ocr/tesseract-pool";
import { addScanNoise, renderTextGrey } from "./text-render";

/**
 * Inputs made on the fly for tests and bench/media (which imports this file, so that sharp and pdf-lib
 * resolve from this package): deterministic for the same arguments.
 */

export const A4_300DPI = { width: 2480, height: 3508 };

/** An A4 page at 300 DPI (12 pt text, 2 cm margins) as a PNG that says it is 300 DPI; optionally a noisy scan. */
export async function a4TextPagePng(lines: readonly string[], options: { noise?: number; seed?: number } = {}): Promise<Buffer> {
  const { data, width, height } = await renderTextGrey({ lines, ...A4_300DPI, fontSize: 50, lineHeight: 75, margin: 236 });
  const pixels = options.noise ? addScanNoise(data, options.noise, options.seed ?? 1) : data;
  return sharp(pixels, { raw: { width, height, channels: 1 } })
    .withMetadata({ density: 300 })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** A PDF whose pages carry a text layer (Helvetica, `fontSize` pt), one array of lines per page. */
export async function textLayerPdf(pages: readonly (readonly string[])[], fontSize = 14): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const fixed = new Date("2025-03-15T10:30:00Z");
  pdf.setCreationDate(fixed);
  pdf.setModificationDate(fixed);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = pdf.addPage([595, 842]);
    lines.forEach((line, i) => page.drawText(line, { x: 56, y: 780 - i * fontSize * 1.7, size: fontSize, font }));
  }
  return Buffer.from(await pdf.save());
}

/** A photo-like JPEG (smoothed colour noise, which compresses like a real photo): 4000x3000 = 12 MP by default. */
export async function photoJpeg(width = 4000, height = 3000): Promise<Buffer> {
  const noise = await sharp({ create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .png()
    .toBuffer();
  return sharp(noise).blur(1.2).modulate({ saturation: 1.5 }).jpeg({ quality: 88 }).toBuffer();
}

export async function imageSize(data: Buffer): Promise<{ width: number; height: number; format: string }> {
  const meta = await sharp(data).metadata();
  return { width: meta.width, height: meta.height, format: meta.format };
}

/** An image's grey pixels as Tesseract reads them, without any filtering (for the median filter's reference figure). */
export async function unfilteredPage(image: Buffer): Promise<PageImage> {
  const { data, info } = await sharp(image).greyscale().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, pixels: data, bilevel: false };
}

/** The group photo sheet that ships inside @vladmandic/human (1280x1158 JPEG, many faces): read, not committed. */
export async function peoplePhotoJpeg(): Promise<Buffer> {
  const sheet = path.join(path.dirname(require.resolve("@vladmandic/human")), "..", "assets", "samples.jpg");
  return readFile(sheet);
}

/** One portrait cut from that sheet (290x300 JPEG): one face, one person. */
export async function portraitJpeg(): Promise<Buffer> {
  return sharp(await peoplePhotoJpeg())
    .extract({ left: 165, top: 0, width: 145, height: 150 })
    .resize(290)
    .jpeg()
    .toBuffer();
}

/**
 * A one-page PDF locked with a user password (standard security handler, RC4 40-bit). Its O and U entries
 * match no password, which is all a reader checks before it asks for one.
 */
export function passwordProtectedPdf(): Buffer {
  const hex = (bytes: number) => `<${"ab".repeat(bytes)}>`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>",
    `<< /Filter /Standard /V 1 /R 2 /O ${hex(32)} /U ${hex(32)} /P -4 >>`,
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Encrypt 4 0 R /ID [${hex(16)} ${hex(16)}] >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}
