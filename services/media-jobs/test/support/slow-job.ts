import { OCR_MODEL } from "@meter/testing";

/**
 * An OCR job over the same small image `pages` times: each page is one Tesseract run (about a third of a
 * second here), so the job stays `running` for seconds, and costs `pages` pages. Tests that must act on
 * a running job, or on a job queued behind one (cancel it, kill the worker under it), use it instead of
 * waiting a fixed time.
 */
export function slowOcrJob(fileId: string, pages: number): { model: string; file_ids: string[] } {
  return { model: OCR_MODEL, file_ids: Array.from({ length: pages }, () => fileId) };
}
