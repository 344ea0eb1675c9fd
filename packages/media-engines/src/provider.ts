import type { Unit } from "@meter/contracts";

/**
 * The ports of the four media operations. A local engine (this package) implements each one today;
 * an upstream provider's adapter can implement the same interface later without the job service changing.
 *
 * Every engine has two halves, used at two different moments of a job:
 * - `measure(...)`: the billable quantity, computed BEFORE anything is reserved (quote and job creation use the
 *   same call, so they compute the same estimate). Cheap: it reads headers and counts, it runs no model.
 *   Throws `QuantityUnknownError` when the quantity cannot be determined (the service answers 422 `cost_unknown`).
 * - `run(...)`: does the work in a worker and returns ONE result file plus the actual quantity, which the
 *   service settles (never more than the hold: the actual quantity is never above the measured one).
 */

export type MediaOperation = "ocr" | "image_edit" | "image_analysis" | "text_analysis";

/** An input file, already fetched from the files service (owned by the caller and verified). */
export interface InputFile {
  data: Buffer;
  /** The MIME type the files service verified (sniffed), e.g. `image/png`, `application/pdf`. */
  mimeType: string;
  /** For error messages and result labels only. */
  filename?: string;
}

/**
 * How far a run is. `unit` is the billing unit where progress is counted in it (`page`, `image`), else
 * what the engine counts (`step` of an edit plan, `task` of a text analysis).
 */
export interface Progress {
  done: number;
  total: number;
  unit: Unit | "step" | "task";
}

export interface RunOptions {
  /** Aborting stops the run as soon as possible (child processes are killed) and rejects with `EngineAbortedError`. */
  signal?: AbortSignal;
  /** Called after each unit of work, and once with done = 0 before the first. Must not throw. */
  onProgress?: (progress: Progress) => void;
}

export interface Quantity {
  unit: Unit;
  quantity: number;
}

/** The one result file of a job, plus what is billed for it. */
export interface EngineResult extends Quantity {
  data: Buffer;
  /** `application/json` for analyses and OCR; the image type for edits. */
  mimeType: string;
  /** A suggested file name for the result file (e.g. `ocr.json`, `edited.png`). */
  filename: string;
}

/** What every engine offers; the request type differs per operation. */
export interface MediaEngine<Request> {
  readonly operation: MediaOperation;
  readonly unit: Unit;
  /** The billable quantity, before any work and any reservation. */
  measure(request: Request): Promise<Quantity>;
  run(request: Request, options?: RunOptions): Promise<EngineResult>;
  /** Loads models and checks binaries, so the first job pays no start-up cost; call once at worker start. */
  warmUp(): Promise<void>;
  /** Releases what the engine holds (kills child processes still running). */
  close(): Promise<void>;
}

// ---- OCR ------------------------------------------------------------------------------------------------

export type OcrLanguageSetting = "auto" | "en" | "ru" | "eng" | "rus";

export interface OcrSettings {
  /** `auto` (default) recognises with English and Russian together and reports what it found. */
  language?: OcrLanguageSetting;
}

export interface OcrRequest {
  /** Images (PNG, JPEG, WebP, TIFF, GIF) and PDFs, in order; each image is one page. */
  files: InputFile[];
  settings: OcrSettings;
}

export interface OcrPage {
  /** 0-based index into the request's files. */
  file_index: number;
  /** 1-based page number within that file (a TIFF's page; always 1 for any other image). */
  page: number;
  /** `text_layer`: the PDF's own text, no recognition; `ocr`: recognised by Tesseract. */
  source: "text_layer" | "ocr";
  text: string;
  /** Mean word confidence 0-100 from Tesseract; null for text-layer pages (nothing was recognised). */
  confidence: number | null;
  /** ISO 639-1 code of the page's script (`en`, `ru`), `und` when the page has no letters. */
  language: "en" | "ru" | "und";
  width_px: number | null;
  height_px: number | null;
}

/** The JSON document an OCR run produces (`application/json`). */
export interface OcrResultDocument {
  object: "ocr_result";
  /** Tesseract language setting used for recognised pages: `eng`, `rus` or `eng+rus`. */
  ocr_languages: string;
  /** The language most of the text is in. */
  language: "en" | "ru" | "und";
  page_count: number;
  ocr_page_count: number;
  text_layer_page_count: number;
  /** Mean of the recognised pages' confidences; null when no page was recognised. */
  mean_confidence: number | null;
  pages: OcrPage[];
  /** All pages' text, separated by form feeds (U+000C). */
  text: string;
}

export type OcrEngine = MediaEngine<OcrRequest> & { readonly operation: "ocr" };

// ---- Image edit -----------------------------------------------------------------------------------------

export type OutputFormat = "png" | "jpeg" | "webp";

/** One step of an edit plan: plain JSON, recorded on the job before it runs. */
export type EditStep =
  | { op: "rotate"; degrees: number }
  | { op: "flip"; axis: "horizontal" | "vertical" }
  | { op: "resize"; width?: number; height?: number; percent?: number; fit: "inside" | "fill" }
  | { op: "crop"; width: number; height: number; left?: number; top?: number }
  | { op: "crop_square" }
  | { op: "grayscale" }
  | { op: "blur"; sigma: number }
  | { op: "sharpen"; sigma: number }
  | { op: "brightness"; factor: number }
  | { op: "contrast"; factor: number }
  | { op: "saturation"; factor: number }
  | { op: "sepia" }
  | { op: "invert" };

export interface EditPlan {
  version: "v1";
  steps: EditStep[];
  /** Output format; absent = the input's format when it is PNG, JPEG or WebP, else PNG. */
  format?: OutputFormat;
  /** JPEG/WebP quality 1-100; absent = 80. */
  quality?: number;
}

export interface ImageEditRequest {
  file: InputFile;
  /** From `parseEditPrompt(prompt)`, parsed before the hold. */
  plan: EditPlan;
}

export type ImageEditEngine = MediaEngine<ImageEditRequest> & { readonly operation: "image_edit" };

// ---- Image analysis -------------------------------------------------------------------------------------

/** What image-analysis models may accept; each model's schema in the registry says which it takes. */
export interface ImageAnalysisSettings {
  /** Detection models: the lowest score reported, 0.2-0.99. */
  min_confidence?: number;
}

export interface ImageAnalysisRequest {
  files: InputFile[];
  settings: ImageAnalysisSettings;
}

export type ImageAnalysisEngine = MediaEngine<ImageAnalysisRequest> & { readonly operation: "image_analysis" };

// ---- Text analysis --------------------------------------------------------------------------------------

export type TextAnalysisTask = "language" | "sentiment" | "entities" | "keywords" | "readability" | "statistics";

export interface TextAnalysisSettings {
  /** Default: every task. */
  tasks?: TextAnalysisTask[];
  /** `auto` (default) detects; `en`/`ru` force the language-dependent tasks' language. */
  language?: "auto" | "en" | "ru";
  /** How many keywords to return, 1-50 (default 10). */
  max_keywords?: number;
}

export interface TextAnalysisRequest {
  input: string;
  settings: TextAnalysisSettings;
}

export type TextAnalysisEngine = MediaEngine<TextAnalysisRequest> & { readonly operation: "text_analysis" };
