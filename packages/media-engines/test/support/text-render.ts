import sharp from "sharp";

/**
 * Renders lines of text black on white with sharp (librsvg + fontconfig), for OCR fixtures and the
 * benchmark. Needs the DejaVu fonts (Debian `fonts-dejavu-core`); without them librsvg falls back to
 * whatever font it finds and the expected character error rates no longer hold.
 */
export interface TextImageOptions {
  lines: readonly string[];
  width: number;
  /** Default: just tall enough for the lines. */
  height?: number;
  fontSize: number;
  /** Default 1.5 x fontSize. */
  lineHeight?: number;
  margin?: number;
  font?: string;
}

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function textSvg(options: TextImageOptions): { svg: string; width: number; height: number } {
  const margin = options.margin ?? options.fontSize * 2;
  const lineHeight = options.lineHeight ?? Math.round(options.fontSize * 1.5);
  const height = options.height ?? Math.ceil(margin * 2 + lineHeight * options.lines.length);
  const font = options.font ?? "DejaVu Sans";
  const texts = options.lines
    .map((line, i) => `<text x="${margin}" y="${margin + options.fontSize + i * lineHeight}" xml:space="preserve">${escapeXml(line)}</text>`)
    .join("");
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${options.width}" height="${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<g font-family="${font}" font-size="${options.fontSize}" fill="#000000">${texts}</g></svg>`;
  return { svg, width: options.width, height };
}

/** 8-bit grey raw pixels of the rendered text. */
export async function renderTextGrey(options: TextImageOptions): Promise<{ data: Buffer; width: number; height: number }> {
  const { svg } = textSvg(options);
  const { data, info } = await sharp(Buffer.from(svg)).flatten({ background: "#ffffff" }).greyscale().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** mulberry32: a tiny seeded generator, so "random" noise is the same on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A scanner's look: a light grey paper tone and salt-and-pepper noise (`ratio` of the pixels turned
 * black or white), deterministic for a given seed.
 */
export function addScanNoise(grey: Buffer, ratio: number, seed: number): Buffer {
  const random = seededRandom(seed);
  const out = Buffer.from(grey);
  for (let i = 0; i < out.length; i++) {
    const paper = out[i]! > 128 ? 235 : out[i]!;
    const r = random();
    out[i] = r < ratio / 2 ? 0 : r < ratio ? 255 : paper;
  }
  return out;
}

/** Greedy word wrap at `columns` characters. */
export function wrap(text: string, columns: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > columns) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}
