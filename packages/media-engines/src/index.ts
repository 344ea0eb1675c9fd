import type { Unit } from "@meter/contracts";
import { z } from "zod";
import { UnsupportedParameterError } from "./errors";
import type { ImageAnalysisEngine, ImageEditEngine, MediaEngine, MediaOperation, OcrEngine, TextAnalysisEngine } from "./provider";
import { IMAGE_ANALYSIS_ACCEPTED_TYPES, createLocalImageAnalysisEngine } from "./image-analysis/image-analysis.engine";
import { IMAGE_DETECTION_ACCEPTED_TYPES, createLocalImageDetectionEngine } from "./image-detection/image-detection.engine";
import { IMAGE_EDIT_ACCEPTED_TYPES, createLocalImageEditEngine } from "./image-edit/image-edit.engine";
import { MAX_INPUT_PIXELS } from "./input";
import { OCR_ACCEPTED_TYPES, createLocalOcrEngine } from "./ocr/ocr.engine";
import { TesseractPool } from "./ocr/tesseract-pool";
import { TEXT_ANALYSIS_TASKS, createLocalTextAnalysisEngine } from "./text-analysis/text-analysis.engine";

export * from "./errors";
export type * from "./provider";
export { parseEditPrompt, SUPPORTED_INSTRUCTIONS } from "./image-edit/edit-grammar";
export { createLocalOcrEngine } from "./ocr/ocr.engine";
export { TesseractPool, type PageImage } from "./ocr/tesseract-pool";
export { billableCharacters } from "./text-analysis/text-analysis.engine";

// ---- settings: what each model accepts (anything else is 400 unsupported_parameter) ----------------------

export const OcrModelSettings = z.strictObject({
  language: z.enum(["auto", "en", "ru", "eng", "rus"]).optional(),
});
export type OcrModelSettings = z.infer<typeof OcrModelSettings>;

/** Image editing is driven by `prompt` (see parseEditPrompt); it takes no settings. */
export const ImageEditModelSettings = z.strictObject({});
export type ImageEditModelSettings = z.infer<typeof ImageEditModelSettings>;

export const ImageAnalysisModelSettings = z.strictObject({});
export type ImageAnalysisModelSettings = z.infer<typeof ImageAnalysisModelSettings>;

export const ImageDetectionModelSettings = z.strictObject({
  min_confidence: z.number().min(0.2).max(0.99).optional(),
});
export type ImageDetectionModelSettings = z.infer<typeof ImageDetectionModelSettings>;

export const TextAnalysisModelSettings = z.strictObject({
  tasks: z.array(z.enum(TEXT_ANALYSIS_TASKS)).min(1).max(TEXT_ANALYSIS_TASKS.length).optional(),
  language: z.enum(["auto", "en", "ru"]).optional(),
  max_keywords: z.int().min(1).max(50).optional(),
});
export type TextAnalysisModelSettings = z.infer<typeof TextAnalysisModelSettings>;

// ---- the registry -----------------------------------------------------------------------------------------

export interface LocalModelLimits {
  /** Input files per job (`file_ids`). */
  maxFiles?: number;
  /** Pages per PDF. */
  maxPagesPerDocument?: number;
  /** Characters (code points) of `input`. */
  maxInputCharacters?: number;
  /** Pixels per input image (checked from the header before anything is decoded). */
  maxInputPixels?: number;
}

/** What every engine of one process shares: the Tesseract processes. */
export interface SharedEngineResources {
  tesseract: TesseractPool;
}

interface Definition<Op extends MediaOperation, S extends z.ZodType, E extends MediaEngine<never>> {
  id: string;
  operation: Op;
  /** The catalog unit its tariff must use; its `measure` counts in it. */
  unit: Unit;
  description: string;
  settings: S;
  /** One line per accepted setting, for error messages and docs. */
  settingsHelp: readonly string[];
  acceptedMimeTypes: readonly string[];
  limits: LocalModelLimits;
  createEngine(shared: SharedEngineResources): E;
}

export type LocalModelDefinition =
  | Definition<"ocr", typeof OcrModelSettings, OcrEngine>
  | Definition<"image_edit", typeof ImageEditModelSettings, ImageEditEngine>
  | Definition<"image_analysis", typeof ImageAnalysisModelSettings | typeof ImageDetectionModelSettings, ImageAnalysisEngine>
  | Definition<"text_analysis", typeof TextAnalysisModelSettings, TextAnalysisEngine>;

const OCR_LIMITS = { maxFiles: 20, maxPagesPerDocument: 200, maxInputPixels: MAX_INPUT_PIXELS };
const IMAGE_ANALYSIS_LIMITS = { maxFiles: 20, maxInputPixels: MAX_INPUT_PIXELS };
const IMAGE_DETECTION_LIMITS = { maxFiles: 10, maxInputPixels: MAX_INPUT_PIXELS };
const TEXT_ANALYSIS_LIMITS = { maxInputCharacters: 100_000 };

/**
 * The built-in local models, by the id a catalog entry's provider block names (`provider.kind = "local"`,
 * `provider.upstream_model` = one of these ids, or the public id itself when it is one). An admin who gives
 * another public id the same provider block gets the same engine with its own tariff.
 */
export const LOCAL_MODELS = {
  "meter-local-ocr": {
    id: "meter-local-ocr",
    operation: "ocr",
    unit: "page",
    description: "OCR of images and PDFs (Tesseract 5, English and Russian); PDF text layers read directly",
    settings: OcrModelSettings,
    settingsHelp: ["language: auto (default, English and Russian together) | en | ru | eng | rus"],
    acceptedMimeTypes: OCR_ACCEPTED_TYPES,
    limits: OCR_LIMITS,
    createEngine: (shared) => createLocalOcrEngine({ limits: OCR_LIMITS, pool: shared.tesseract }),
  },
  "meter-local-image-edit": {
    id: "meter-local-image-edit",
    operation: "image_edit",
    unit: "request",
    description: "Image editing from an English or Russian instruction (rotate, flip, resize, crop, colour, format)",
    settings: ImageEditModelSettings,
    settingsHelp: [],
    acceptedMimeTypes: IMAGE_EDIT_ACCEPTED_TYPES,
    limits: { maxFiles: 1, maxInputPixels: MAX_INPUT_PIXELS },
    createEngine: () => createLocalImageEditEngine(),
  },
  "meter-local-image-analysis": {
    id: "meter-local-image-analysis",
    operation: "image_analysis",
    unit: "image",
    description: "Image facts: size, format, EXIF, dominant colours, blur score, perceptual hash",
    settings: ImageAnalysisModelSettings,
    settingsHelp: [],
    acceptedMimeTypes: IMAGE_ANALYSIS_ACCEPTED_TYPES,
    limits: IMAGE_ANALYSIS_LIMITS,
    createEngine: () => createLocalImageAnalysisEngine({ limits: IMAGE_ANALYSIS_LIMITS }),
  },
  "meter-local-image-detection": {
    id: "meter-local-image-detection",
    operation: "image_analysis",
    unit: "image",
    description: "Faces and objects (80 COCO classes) with boxes and scores, from models shipped in @vladmandic/human",
    settings: ImageDetectionModelSettings,
    settingsHelp: ["min_confidence: number 0.2-0.99 (default 0.4)"],
    acceptedMimeTypes: IMAGE_DETECTION_ACCEPTED_TYPES,
    limits: IMAGE_DETECTION_LIMITS,
    createEngine: () => createLocalImageDetectionEngine({ limits: IMAGE_DETECTION_LIMITS }),
  },
  "meter-local-text-analysis": {
    id: "meter-local-text-analysis",
    operation: "text_analysis",
    unit: "character",
    description: "Text analysis in English and Russian: language, sentiment, entities, keywords, readability, statistics",
    settings: TextAnalysisModelSettings,
    settingsHelp: [
      `tasks: array of ${TEXT_ANALYSIS_TASKS.join(", ")} (default: all)`,
      "language: auto (default) | en | ru",
      "max_keywords: integer 1-50 (default 10)",
    ],
    acceptedMimeTypes: [],
    limits: TEXT_ANALYSIS_LIMITS,
    createEngine: () => createLocalTextAnalysisEngine({ limits: TEXT_ANALYSIS_LIMITS }),
  },
} as const satisfies Record<string, LocalModelDefinition>;

export type LocalModelId = keyof typeof LOCAL_MODELS;
export const LOCAL_MODEL_IDS = Object.keys(LOCAL_MODELS) as LocalModelId[];

export function isLocalModelId(id: string): id is LocalModelId {
  return Object.hasOwn(LOCAL_MODELS, id);
}

export function localModel(id: string): LocalModelDefinition | undefined {
  return isLocalModelId(id) ? LOCAL_MODELS[id] : undefined;
}

export type LocalModelSettings<Id extends LocalModelId> = z.infer<(typeof LOCAL_MODELS)[Id]["settings"]>;

/**
 * Validates a request's `settings` (absent or null = none) against the model's schema. A key the model
 * does not declare, or a value outside what it allows, is an UnsupportedParameterError (HTTP 400
 * `unsupported_parameter`) naming the setting and listing what the model accepts.
 */
export function parseModelSettings<Id extends LocalModelId>(id: Id, settings: unknown): LocalModelSettings<Id> {
  const model: LocalModelDefinition = LOCAL_MODELS[id];
  return parseSettings(model, id, settings) as LocalModelSettings<Id>;
}

/** The same check against any model's settings schema (an upstream model's included), named `modelName` in messages. */
export function parseSettings(model: { settings: z.ZodType; settingsHelp: readonly string[] }, id: string, settings: unknown): unknown {
  const parsed = model.settings.safeParse(settings ?? {});
  if (parsed.success) return parsed.data;
  const accepted = model.settingsHelp.length > 0 ? `model ${id} accepts: ${model.settingsHelp.join("; ")}` : `model ${id} takes no settings`;
  const issue = parsed.error.issues[0];
  if (issue?.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => [...issue.path, key].join("."));
    throw new UnsupportedParameterError(
      `settings.${keys[0]}`,
      `setting${keys.length > 1 ? "s" : ""} ${keys.map((k) => `"${k}"`).join(", ")} not supported; ${accepted}`,
      model.settingsHelp,
    );
  }
  const where = issue && issue.path.length > 0 ? `settings.${issue.path.join(".")}` : "settings";
  throw new UnsupportedParameterError(where, `${where}: ${issue?.message ?? "invalid"}; ${accepted}`, model.settingsHelp);
}

/** Model descriptions as JSON (settings as JSON Schema), e.g. for `GET /v1/models` or the catalog seed. */
export function describeLocalModels(): {
  id: LocalModelId;
  operation: MediaOperation;
  unit: Unit;
  description: string;
  settings_schema: unknown;
  accepted_mime_types: readonly string[];
  limits: LocalModelLimits;
}[] {
  return LOCAL_MODEL_IDS.map((id) => {
    const model: LocalModelDefinition = LOCAL_MODELS[id];
    return {
      id,
      operation: model.operation,
      unit: model.unit,
      description: model.description,
      settings_schema: z.toJSONSchema(model.settings),
      accepted_mime_types: model.acceptedMimeTypes,
      limits: model.limits,
    };
  });
}

export interface LocalEngines {
  ocr: OcrEngine;
  imageEdit: ImageEditEngine;
  imageAnalysis: ImageAnalysisEngine;
  imageDetection: ImageAnalysisEngine;
  textAnalysis: TextAnalysisEngine;
  /** The engine of a local model id. */
  engine<Id extends LocalModelId>(id: Id): ReturnType<(typeof LOCAL_MODELS)[Id]["createEngine"]>;
  /** Checks binaries and loads every model; call at worker start, before consuming jobs. */
  warmUp(): Promise<void>;
  /** Kills running Tesseract processes. */
  close(): Promise<void>;
}

export interface LocalEnginesOptions {
  /** Tesseract processes at once, shared by all OCR jobs of the process. Default: the number of cores. */
  ocrProcesses?: number;
}

/** One set of engines per process (the worker's); the API process needs only the registry and measure(). */
export function createLocalEngines(options: LocalEnginesOptions = {}): LocalEngines {
  const shared: SharedEngineResources = { tesseract: new TesseractPool({ size: options.ocrProcesses }) };
  const ocr = LOCAL_MODELS["meter-local-ocr"].createEngine(shared);
  const imageEdit = LOCAL_MODELS["meter-local-image-edit"].createEngine();
  const imageAnalysis = LOCAL_MODELS["meter-local-image-analysis"].createEngine();
  const imageDetection = LOCAL_MODELS["meter-local-image-detection"].createEngine();
  const textAnalysis = LOCAL_MODELS["meter-local-text-analysis"].createEngine();
  const byId = {
    "meter-local-ocr": ocr,
    "meter-local-image-edit": imageEdit,
    "meter-local-image-analysis": imageAnalysis,
    "meter-local-image-detection": imageDetection,
    "meter-local-text-analysis": textAnalysis,
  } satisfies Record<LocalModelId, MediaEngine<never>>;
  const all = [ocr, imageEdit, imageAnalysis, imageDetection, textAnalysis];
  return {
    ocr,
    imageEdit,
    imageAnalysis,
    imageDetection,
    textAnalysis,
    engine: (id) => byId[id] as never,
    warmUp: async () => {
      for (const engine of all) await engine.warmUp();
    },
    close: async () => {
      await Promise.all(all.map((engine) => engine.close()));
    },
  };
}
export {
  DEFAULT_IMAGE_PROMPT,
  DEFAULT_TEXT_INSTRUCTIONS,
  measureUpstream,
  runUpstream,
  type UpstreamInputFile,
  type UpstreamMediaInput,
  type UpstreamMediaResult,
  type UpstreamRoute,
} from "./upstream/upstream-media";
export { MAX_IMAGE_SIDE } from "./upstream/page-images";
