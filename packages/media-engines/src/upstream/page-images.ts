import sharp from "sharp";
import type { ChatImage } from "@meter/upstreams";
import { decoding, isPdf, sharpInput } from "../input";
import { PdfDocument } from "../ocr/pdf-document";
import type { InputFile } from "../provider";

/**
 * The longest side of an image sent to a vision model: larger ones are scaled down first, which bounds
 * what one image costs upstream (at about 1.15 megapixels, the size Anthropic's vision guide recommends,
 * and under OpenAI's high-detail tiling limit).
 */
export const MAX_IMAGE_SIDE = 1568;

/** The resolution a PDF page is drawn at for a vision model: readable text, then scaled to MAX_IMAGE_SIDE. */
const PDF_DPI = 150;

/**
 * The given 1-based pages of a file as images a chat model takes: a PDF's pages drawn, a TIFF's pages,
 * any other image as it is (its EXIF orientation applied); each scaled to MAX_IMAGE_SIDE at most, a JPEG
 * kept JPEG and everything else PNG (TIFF is no chat protocol's type).
 */
export async function pagesOf(file: InputFile, fileIndex: number, pages: readonly number[]): Promise<ChatImage[]> {
  if (isPdf(file)) return pdfPages(file, fileIndex, pages);
  return decoding(fileIndex, () =>
    Promise.all(
      pages.map(async (page) => {
        const image = sharp(file.data, sharpInput(file.mimeType === "image/tiff" ? { page: page - 1 } : {})).rotate();
        return encode(image, file.mimeType === "image/jpeg" ? "jpeg" : "png");
      }),
    ),
  );
}

async function pdfPages(file: InputFile, fileIndex: number, pages: readonly number[]): Promise<ChatImage[]> {
  const doc = await PdfDocument.open(file.data, fileIndex);
  try {
    const images: ChatImage[] = [];
    for (const page of pages) {
      const raster = await doc.scan(page, { dpi: PDF_DPI, minDpi: PDF_DPI, maxDpi: PDF_DPI, maxPixels: 4 * MAX_IMAGE_SIDE * MAX_IMAGE_SIDE });
      const image = sharp(raster.data, { raw: { width: raster.width, height: raster.height, channels: raster.channels } });
      images.push(await decoding(fileIndex, () => encode(image, "png")));
    }
    return images;
  } finally {
    await doc.destroy();
  }
}

async function encode(image: sharp.Sharp, format: "png" | "jpeg"): Promise<ChatImage> {
  const sized = image.resize({ width: MAX_IMAGE_SIDE, height: MAX_IMAGE_SIDE, fit: "inside", withoutEnlargement: true });
  const bytes = format === "jpeg" ? await sized.jpeg({ quality: 85 }).toBuffer() : await sized.png().toBuffer();
  return { mediaType: `image/${format}`, data: bytes.toString("base64") };
}
