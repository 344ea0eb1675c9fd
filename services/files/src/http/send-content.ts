import { pipeline } from "node:stream/promises";
import type { Request, Response } from "express";
import type { FileContent } from "../services/file.service";

/**
 * Streams a file's bytes with its type and length, as an attachment the browser must not sniff. Once
 * bytes are out a failure can only cut the response short (the client sees a short body).
 */
export async function sendContent(req: Request, res: Response, { file, body }: FileContent): Promise<void> {
  res.status(200);
  res.setHeader("content-type", file.mimeType);
  res.setHeader("content-length", String(file.sizeBytes));
  res.setHeader("content-disposition", contentDisposition(file.filename));
  res.setHeader("cache-control", "private, no-store");
  res.setHeader("x-content-type-options", "nosniff");
  try {
    await pipeline(body, res);
  } catch (error) {
    if (!res.destroyed) res.destroy();
    req.log.warn({ err: error, file_id: file.id }, "download cut short");
  }
}

/** RFC 6266: an ASCII fallback name plus the exact name in RFC 5987 encoding. */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
