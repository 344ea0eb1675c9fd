export interface ImageDimensions {
  width: number;
  height: number;
}

/**
 * Reads an image's width and height from its header as the bytes stream past, without decoding or
 * keeping them: PNG's IHDR, WebP's VP8/VP8L/VP8X header, GIF's logical screen, JPEG's frame header
 * (SOFn) wherever its metadata segments put it, TIFF's first directory wherever it lies. `result` is
 * undefined while unknown, and stays so for a header it cannot read (no decoder could either).
 */
export interface DimensionsReader {
  write(chunk: Uint8Array): void;
  readonly result: ImageDimensions | undefined;
}

/** A reader for the declared type, or undefined for a type that is not an image (PDF). */
export function dimensionsReaderFor(mimeType: string): DimensionsReader | undefined {
  if (mimeType === "image/png") return new FixedHeaderReader(24, png);
  if (mimeType === "image/webp") return new FixedHeaderReader(30, webp);
  if (mimeType === "image/gif") return new FixedHeaderReader(10, gif);
  if (mimeType === "image/jpeg") return new JpegFrameReader();
  if (mimeType === "image/tiff") return new TiffDirectoryReader();
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

function gif(head: Buffer): ImageDimensions | undefined {
  if (!/^GIF8[79]a$/.test(head.toString("latin1", 0, 6))) return undefined;
  return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
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

/** The bytes at [start, start + length) of a stream, gathered as they pass. */
class ByteRange {
  private readonly parts: Buffer[] = [];
  private gathered = 0;

  constructor(
    readonly start: number,
    readonly length: number,
  ) {}

  /** Takes what of `chunk` (which begins at `offset` in the stream) lies in the range; the range once whole. */
  take(chunk: Buffer, offset: number): Buffer | undefined {
    const from = Math.max(this.start + this.gathered, offset);
    const to = Math.min(this.start + this.length, offset + chunk.length);
    if (to > from) {
      this.parts.push(Buffer.from(chunk.subarray(from - offset, to - offset)));
      this.gathered += to - from;
    }
    return this.gathered === this.length ? Buffer.concat(this.parts) : undefined;
  }
}

/**
 * TIFF (classic, either byte order): the header names where the first directory is, which may be
 * anywhere, even after the image data; its ImageWidth (256) and ImageLength (257) entries are read
 * there. A directory pointing backwards, or BigTIFF, is unread.
 */
class TiffDirectoryReader implements DimensionsReader {
  private offset = 0;
  private wanted: ByteRange | undefined = new ByteRange(0, 8);
  private step: "header" | "count" | "entries" = "header";
  private littleEndian = true;
  private directory = 0;
  result: ImageDimensions | undefined;

  write(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (this.wanted) {
      const range = this.wanted.take(bytes, this.offset);
      if (!range) break;
      this.wanted = this.next(range);
    }
    this.offset += bytes.length;
  }

  private next(range: Buffer): ByteRange | undefined {
    const u16 = (at: number) => (this.littleEndian ? range.readUInt16LE(at) : range.readUInt16BE(at));
    const u32 = (at: number) => (this.littleEndian ? range.readUInt32LE(at) : range.readUInt32BE(at));
    if (this.step === "header") {
      const order = range.toString("latin1", 0, 2);
      if (order !== "II" && order !== "MM") return undefined;
      this.littleEndian = order === "II";
      this.directory = u32(4);
      if (u16(2) !== 42 || this.directory < 8) return undefined;
      this.step = "count";
      return new ByteRange(this.directory, 2);
    }
    if (this.step === "count") {
      const entries = u16(0);
      if (entries === 0) return undefined;
      this.step = "entries";
      return new ByteRange(this.directory + 2, entries * 12);
    }
    const found: Partial<ImageDimensions> = {};
    for (let at = 0; at + 12 <= range.length; at += 12) {
      const tag = u16(at);
      const type = u16(at + 2);
      const value = type === 3 ? u16(at + 8) : type === 4 ? u32(at + 8) : undefined;
      if (tag === 256) found.width = value;
      if (tag === 257) found.height = value;
    }
    if (found.width !== undefined && found.height !== undefined) this.result = { width: found.width, height: found.height };
    return undefined;
  }
}
