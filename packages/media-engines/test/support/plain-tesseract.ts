import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { CorpusDocument } from "./ocr-corpus";

const EXTENSIONS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/tiff": "tif" };
const TESSERACT_LANGUAGE = { en: "eng", ru: "rus" } as const;

/**
 * What the OCR corpus compares the engine with: plain `tesseract FILE - -l eng|rus` on the document's own
 * file (for a PDF, the image it holds), single-threaded (OMP_THREAD_LIMIT=1), as a user would run it.
 * The file is written into `dir` as `<name>.<its extension>`.
 */
export async function plainTesseract(doc: CorpusDocument, dir: string, name: string): Promise<string> {
  const input = doc.plain ?? doc;
  const file = path.join(dir, `${name}.${EXTENSIONS[input.mimeType]}`);
  await writeFile(file, input.data);
  return new Promise((resolve, reject) => {
    execFile(
      "tesseract",
      [file, "-", "-l", TESSERACT_LANGUAGE[doc.language]],
      { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, maxBuffer: 64 << 20 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
}
