export interface ImageDimensions {
  width: number;
  height: number;
}

/**
 * Reads an image's width and height from its header as the bytes stream past, without decoding or
 * keeping them: PNG's IHDR, WebP's VP8/VP8L/VP8X header, JPEG's frame header (SOFn) wherever its
 * metadata segments put it. `result` is undefined while unknown, and stays so for a header it cannot
 * read (no decoder could read such a file either).
 */
export interface DimensionsReader {
  write(chunk: Uint8Array): void;
  readonly result: ImageDimensions | undefined;
}

/** A reader for the declared type, or undefined for a type that is not an image (PDF). */
export function dimensionsReaderFor(mimeType: string): DimensionsReader | undefined {
  if (mimeType === "image/png") return new FixedHeaderReader(24, png);
  if (mimeType === "image/webp") return new FixedHeaderReader(30, webp);
  if (mimeType === "image/jpeg") return new JpegFrameReader();
  return undefined;
}

/** Formats whose dimensions sit at fixed offsets in the first bytes. */
class FixedHeaderReader implements DimensionsReader {
  private head: Buffer = Buffer.alloc(0);
  result: ImageDimensions | undefined;

  constructor(
    private readonly size: number,
    private readonly parse: (head: Buffer) => ImageDimensions | undefined,
  ) {}

  write(chunk: Uint8Array): void {
    if (this.head.length >= this.size) return;
    this.head = Buffer.concat([this.head, chunk.subarray(0, this.size - this.head.length)]);
    if (this.head.length === this.size) this.result = this.parse(this.head);
  }
}

function png(head: Buffer): ImageDimensions | undefined {
  if (head.toString("latin1", 12, 16) !== "IHDR") return undefined;
  return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
}

function webp(head: Buffer): ImageDimensions | undefined {
  if (head.toString("latin1", 0, 4) !== "RIFF" || head.toString("latin1", 8, 12) !== "WEBP") return undefined;
  const chunk = head.toString("latin1", 12, 16);
  // VP8X: the canvas, which every frame of an animation lies within.
  if (chunk === "VP8X") return { width: head.readUIntLE(24, 3) + 1, height: head.readUIntLE(27, 3) + 1 };
  if (chunk === "VP8L" && head[20] === 0x2f) {
    const bits = head.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8 " && head[23] === 0x9d && head[24] === 0x01 && head[25] === 0x2a) {
    return { width: head.readUInt16LE(26) & 0x3fff, height: head.readUInt16LE(28) & 0x3fff };
  }
  return undefined;
}

/** Start-of-frame markers: SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC). */
const isFrameMarker = (marker: number) => marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
/** Markers without a length: SOI, TEM, RST0-7. */
const isStandalone = (marker: number) => marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7);

/**
 * Walks JPEG markers as libjpeg does (bytes before a marker and fill bytes skipped) and skips every
 * segment's body unread, keeping at most one segment header. Stops at the first frame header, or
 * without a result at the scan (SOS) or the end (EOI): a decoder finds no frame after those.
 */
class JpegFrameReader implements DimensionsReader {
  private pending: Buffer = Buffer.alloc(0);
  private skip = 0;
  private done = false;
  result: ImageDimensions | undefined;

  write(chunk: Uint8Array): void {
    if (this.done) return;
    let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.skip > 0) {
      const skipped = Math.min(this.skip, bytes.length);
      this.skip -= skipped;
      bytes = bytes.subarray(skipped);
    }
    this.pending = this.pending.length ? Buffer.concat([this.pending, bytes]) : bytes;
    this.walk();
    // What is left is less than one segment header: copy it, the chunk it belongs to is not ours to keep.
    this.pending = Buffer.from(this.pending);
  }

  private walk(): void {
    for (;;) {
      const start = this.pending.indexOf(0xff);
      if (start < 0) {
        this.pending = Buffer.alloc(0);
        return;
      }
      let at = start + 1;
      while (this.pending[at] === 0xff) at++;
      const marker = this.pending[at];
      if (marker === undefined) {
        this.pending = this.pending.subarray(start);
        return;
      }
      if (marker === 0x00) {
        // A stuffed 0xFF is data, not a marker.
        this.pending = this.pending.subarray(at + 1);
        continue;
      }
      if (marker === 0xda || marker === 0xd9) {
        this.finish(undefined);
        return;
      }
      if (isStandalone(marker)) {
        this.pending = this.pending.subarray(at + 1);
        continue;
      }
      const segment = this.pending.subarray(at + 1);
      if (segment.length < (isFrameMarker(marker) ? 7 : 2)) {
        this.pending = this.pending.subarray(start);
        return;
      }
      if (isFrameMarker(marker)) {
        // Length (2), precision (1), height (2), width (2). A height of 0 (set later by DNL) is unreadable.
        const height = segment.readUInt16BE(3);
        this.finish(height === 0 ? undefined : { width: segment.readUInt16BE(5), height });
        return;
      }
      const length = segment.readUInt16BE(0);
      if (length < 2) {
        this.finish(undefined);
        return;
      }
      if (segment.length >= length) {
        this.pending = segment.subarray(length);
        continue;
      }
      this.skip = length - segment.length;
      this.pending = Buffer.alloc(0);
      return;
    }
  }

  private finish(result: ImageDimensions | undefined): void {
    this.result = result;
    this.done = true;
    this.pending = Buffer.alloc(0);
  }
}
