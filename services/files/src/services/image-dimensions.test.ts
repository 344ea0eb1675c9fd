import { dimensionsReaderFor, type ImageDimensions } from "./image-dimensions";

/** The reader's answer when the bytes arrive in chunks of `size` (every split of a header is a case). */
function read(mimeType: string, bytes: Buffer, size = bytes.length): ImageDimensions | undefined {
  const reader = dimensionsReaderFor(mimeType)!;
  for (let at = 0; at < bytes.length; at += size) reader.write(bytes.subarray(at, at + size));
  return reader.result;
}

function pngHeader(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d", "hex"), Buffer.from("IHDR"), ihdr, Buffer.alloc(4)]);
}

function segment(marker: number, body: Buffer): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([head, body]);
}

/** SOI, metadata segments, a baseline frame header, then a scan whose data would hide a false SOF. */
function jpeg(width: number, height: number, metadata: Buffer[] = []): Buffer {
  const frame = Buffer.from([8, 0, 0, 0, 0, 1, 1, 0x11, 0]);
  frame.writeUInt16BE(height, 1);
  frame.writeUInt16BE(width, 3);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    ...metadata,
    segment(0xdb, Buffer.alloc(65)),
    segment(0xc0, frame),
    segment(0xda, Buffer.from([1, 1, 0, 0, 0x3f, 0])),
    Buffer.from([0x12, 0xff, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x10, 0x00, 0x10, 0x00]),
    Buffer.from([0xff, 0xd9]),
  ]);
}

function riff(chunk: string, payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt32LE(payload.length);
  const total = Buffer.alloc(4);
  total.writeUInt32LE(4 + 8 + payload.length);
  return Buffer.concat([Buffer.from("RIFF"), total, Buffer.from("WEBP"), Buffer.from(chunk), size, payload]);
}

describe("dimensionsReaderFor", () => {
  it("reads a PNG's IHDR, whatever the chunking", () => {
    const bytes = pngHeader(20_000, 20_000);
    for (const size of [1, 3, 16, 1000]) expect(read("image/png", bytes, size)).toEqual({ width: 20_000, height: 20_000 });
  });

  it("reads a JPEG's frame header behind 130 KB of metadata, split anywhere, without keeping the metadata", () => {
    const exif = segment(0xe1, Buffer.alloc(65_000, 0xff));
    const icc = segment(0xe2, Buffer.alloc(65_000, 0xc0));
    const bytes = jpeg(65_000, 40_000, [exif, icc]);
    for (const size of [1, 2, 5, 4096, 65_536, bytes.length]) expect(read("image/jpeg", bytes, size)).toEqual({ width: 65_000, height: 40_000 });
  });

  it("reads a JPEG whose segments are preceded by stray and fill bytes, as libjpeg does", () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0x00, 0x17, 0xff, 0xff]), jpeg(640, 480).subarray(2)]);
    expect(read("image/jpeg", bytes, 7)).toEqual({ width: 640, height: 480 });
  });

  it("finds no dimensions in a JPEG whose scan comes before any frame header, or whose height is left to DNL", () => {
    const scanFirst = Buffer.concat([Buffer.from([0xff, 0xd8]), segment(0xda, Buffer.alloc(6)), jpeg(10, 10).subarray(2)]);
    expect(read("image/jpeg", scanFirst)).toBeUndefined();
    expect(read("image/jpeg", jpeg(10, 0))).toBeUndefined();
  });

  it("reads WebP's lossy, lossless and extended headers", () => {
    const vp8 = Buffer.from([0x50, 0x2a, 0x00, 0x9d, 0x01, 0x2a, 0, 0, 0, 0]);
    vp8.writeUInt16LE(16_383, 6);
    vp8.writeUInt16LE(12_000, 8);
    expect(read("image/webp", riff("VP8 ", vp8), 5)).toEqual({ width: 16_383, height: 12_000 });

    const vp8l = Buffer.from([0x2f, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    vp8l.writeUInt32LE((3000 - 1) | ((2000 - 1) << 14), 1);
    expect(read("image/webp", riff("VP8L", vp8l))).toEqual({ width: 3000, height: 2000 });

    const vp8x = Buffer.alloc(10);
    vp8x.writeUIntLE(16_384 - 1, 4, 3);
    vp8x.writeUIntLE(16_384 - 1, 7, 3);
    expect(read("image/webp", riff("VP8X", vp8x), 1)).toEqual({ width: 16_384, height: 16_384 });
  });

  it("reads nothing from a PDF, and nothing from a header it does not know", () => {
    expect(dimensionsReaderFor("application/pdf")).toBeUndefined();
    expect(read("image/png", Buffer.alloc(40))).toBeUndefined();
    expect(read("image/webp", riff("ALPH", Buffer.alloc(10)))).toBeUndefined();
  });
});

describe("dimensionsReaderFor, for the types the OCR models list", () => {
  it("reads a GIF's logical screen", () => {
    const gif = Buffer.concat([Buffer.from("GIF89a"), Buffer.from([0x20, 0x4e, 0x10, 0x27]), Buffer.alloc(20)]);
    expect(read("image/gif", gif, 3)).toEqual({ width: 20_000, height: 10_000 });
  });

  /** A TIFF whose first directory sits after `gap` bytes of image data, in either byte order. */
  function tiff(width: number, height: number, gap: number, littleEndian: boolean): Buffer {
    const u16 = (n: number) => {
      const b = Buffer.alloc(2);
      if (littleEndian) b.writeUInt16LE(n);
      else b.writeUInt16BE(n);
      return b;
    };
    const u32 = (n: number) => {
      const b = Buffer.alloc(4);
      if (littleEndian) b.writeUInt32LE(n);
      else b.writeUInt32BE(n);
      return b;
    };
    const entry = (tag: number, type: number, value: number) =>
      Buffer.concat([u16(tag), u16(type), u32(1), type === 3 ? Buffer.concat([u16(value), u16(0)]) : u32(value)]);
    const directory = Buffer.concat([u16(3), entry(254, 4, 0), entry(256, 4, width), entry(257, 3, height), u32(0)]);
    return Buffer.concat([Buffer.from(littleEndian ? "II" : "MM"), u16(42), u32(8 + gap), Buffer.alloc(gap, 0x49), directory]);
  }

  it("reads a TIFF's first directory wherever it lies, in either byte order, however the bytes arrive", () => {
    for (const littleEndian of [true, false]) {
      const bytes = tiff(30_000, 20_000, 100_000, littleEndian);
      for (const size of [1, 7, 4096, bytes.length]) expect(read("image/tiff", bytes, size)).toEqual({ width: 30_000, height: 20_000 });
    }
  });

  it("reads nothing from a TIFF whose directory offset points into its header", () => {
    const bytes = tiff(10, 10, 0, true);
    bytes.writeUInt32LE(4, 4);
    expect(read("image/tiff", bytes)).toBeUndefined();
  });
});
