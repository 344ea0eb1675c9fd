import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `meter-${prefix}-`));
}

/**
 * The EICAR anti-virus test file (68 bytes), decoded at run time so that no file in the
 * repository carries the test string itself and trips scanners on developers' machines.
 */
export const EICAR = Buffer.from(
  "58354f2150254041505b345c505a58353428505e2937434329377d2445494341522d5354414e444152442d414e544956495255532d544553542d46494c452124482b482a",
  "hex",
);
/** The published MD5 of the EICAR file: proves the bytes above are the real test string. */
export const EICAR_MD5 = "44d88612fea8a8f36de82e1278abb02f";

export function md5(data: Buffer): string {
  return createHash("md5").update(data).digest("hex");
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid width x height 8-bit RGB PNG in a gradient. */
export function png(width = 16, height = 16): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) row.set([(x * 255) / width, (y * 255) / height, 128], 1 + x * 3);
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", zlib.deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/**
 * A width x height 8-bit greyscale PNG, every pixel 0: 389 KB at 20000x20000, 400 MB once decoded. The
 * rows are deflated as a stream, so making it never holds the decoded image either.
 */
export async function zeroPng(width: number, height: number): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8);
  const deflate = zlib.createDeflate({ level: 9 });
  const compressed: Buffer[] = [];
  deflate.on("data", (c: Buffer) => compressed.push(c));
  const row = Buffer.alloc(1 + width);
  for (let y = 0; y < height; y++) if (!deflate.write(row)) await once(deflate, "drain");
  deflate.end();
  await once(deflate, "end");
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", Buffer.concat(compressed)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
