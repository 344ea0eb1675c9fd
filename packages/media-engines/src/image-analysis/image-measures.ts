import sharp from "sharp";

export interface DominantColour {
  hex: string;
  rgb: [number, number, number];
  /** Share of the image's pixels, 0-1. */
  share: number;
}

interface Raster {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

/**
 * The most frequent colours: pixels are binned on a 16-level grid per channel (4096 bins), and each of
 * the five fullest bins is reported as the mean colour of its pixels. Deterministic and cheap on the
 * 512 px working copy; close shades of one surface fall in one bin, which is what "dominant" should mean.
 */
export function dominantColours(rgb: Raster, count = 5): DominantColour[] {
  const bins = new Map<number, { n: number; r: number; g: number; b: number }>();
  const pixels = rgb.width * rgb.height;
  for (let i = 0, j = 0; i < pixels; i++, j += rgb.channels) {
    const r = rgb.data[j]!;
    const g = rgb.data[j + 1]!;
    const b = rgb.data[j + 2]!;
    const key = ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
    const bin = bins.get(key);
    if (bin) {
      bin.n++;
      bin.r += r;
      bin.g += g;
      bin.b += b;
    } else bins.set(key, { n: 1, r, g, b });
  }
  return [...bins.values()]
    .sort((a, b) => b.n - a.n)
    .slice(0, count)
    .map((bin) => {
      const colour: [number, number, number] = [Math.round(bin.r / bin.n), Math.round(bin.g / bin.n), Math.round(bin.b / bin.n)];
      return {
        hex: `#${colour.map((c) => c.toString(16).padStart(2, "0")).join("")}`,
        rgb: colour,
        share: Math.round((bin.n / pixels) * 10_000) / 10_000,
      };
    });
}

/**
 * Variance of the Laplacian (4-neighbour kernel) over the image: low for blurred images, high for sharp
 * ones. Computed here in 32-bit integers rather than with sharp's convolve, whose 8-bit output would clip
 * the negative half of the response.
 */
export function laplacianVariance(grey: Buffer, width: number, height: number): number {
  if (width < 3 || height < 3) return 0;
  let sum = 0;
  let sumSq = 0;
  let n = 0;
  for (let y = 1; y < height - 1; y++) {
    const row = y * width;
    for (let x = 1; x < width - 1; x++) {
      const i = row + x;
      const v = grey[i - width]! + grey[i + width]! + grey[i - 1]! + grey[i + 1]! - 4 * grey[i]!;
      sum += v;
      sumSq += v * v;
      n++;
    }
  }
  const mean = sum / n;
  return sumSq / n - mean * mean;
}

/** dHash: the grey image at 9x8, one bit per horizontally adjacent pair (left brighter than right). */
export async function dHash(grey: { data: Buffer; width: number; height: number }): Promise<string> {
  const small = await sharp(grey.data, { raw: { width: grey.width, height: grey.height, channels: 1 } })
    .resize(9, 8, { fit: "fill", kernel: "cubic" })
    .raw()
    .toBuffer();
  let hash = 0n;
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      hash = (hash << 1n) | (small[y * 9 + x]! > small[y * 9 + x + 1]! ? 1n : 0n);
    }
  }
  return hash.toString(16).padStart(16, "0");
}

/** Bits that differ between two dHashes (0-64): under ~10 means the same picture. */
export function hammingDistance(a: string, b: string): number {
  let x = BigInt(`0x${a}`) ^ BigInt(`0x${b}`);
  let bits = 0;
  while (x > 0n) {
    bits += Number(x & 1n);
    x >>= 1n;
  }
  return bits;
}
