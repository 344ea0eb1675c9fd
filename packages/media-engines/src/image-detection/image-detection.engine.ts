import sharp from "sharp";
import type { EngineResult, ImageAnalysisEngine, ImageAnalysisRequest, InputFile, Quantity, RunOptions } from "../provider";
import { IMAGE_MIME_TYPES, assertAccepted, assertFileCount, eachImage, decoding, imageHeader, sharpInput } from "../input";
import { detect, loadHumanDetector, type Box } from "./human-detector";
import { jsonResult } from "../json-result";

export const IMAGE_DETECTION_ACCEPTED_TYPES: readonly string[] = IMAGE_MIME_TYPES;
export const DEFAULT_MIN_CONFIDENCE = 0.4;
/** The detectors see at most this many pixels per side; they scale their input down much further anyway. */
const WORKING_SIDE = 1280;

export interface ImageDetection {
  file_index: number;
  /** As displayed (EXIF orientation applied); boxes are in these pixels. */
  width: number;
  height: number;
  faces: { score: number; box: Box }[];
  objects: { label: string; score: number; box: Box }[];
  face_count: number;
  /** Objects per COCO label, e.g. `{person: 3, car: 1}`. */
  object_counts: Record<string, number>;
}

export interface ImageDetectionDocument {
  object: "image_detection_result";
  detectors: string;
  min_confidence: number;
  images: ImageDetection[];
}

/**
 * The second image-analysis model: faces (BlazeFace) and objects (CenterNet, the 80 COCO classes) from
 * @vladmandic/human on the WebAssembly backend. Billed per image like the first.
 */
export function createLocalImageDetectionEngine(options: { limits: { maxFiles: number } }): ImageAnalysisEngine {
  const { limits } = options;

  async function measure(request: ImageAnalysisRequest): Promise<Quantity> {
    assertFileCount(request.files, limits.maxFiles);
    for (const [index, file] of request.files.entries()) {
      assertAccepted(file, IMAGE_DETECTION_ACCEPTED_TYPES, index);
      await imageHeader(file, index);
    }
    return { unit: "image", quantity: request.files.length };
  }

  async function detectOne(file: InputFile, fileIndex: number, minConfidence: number): Promise<ImageDetection> {
    const header = await imageHeader(file, fileIndex);
    const human = await loadHumanDetector();
    const { data, info } = await decoding(fileIndex, () =>
      sharp(file.data, sharpInput())
        .autoOrient()
        .resize({ width: WORKING_SIDE, height: WORKING_SIDE, fit: "inside", withoutEnlargement: true })
        .flatten({ background: "#ffffff" })
        .toColourspace("srgb")
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true }),
    );
    const found = await detect(human, { data, width: info.width, height: info.height });
    const scale = header.width / info.width;
    const toImage = (box: Box): Box => ({
      x: Math.round(box.x * scale),
      y: Math.round(box.y * scale),
      width: Math.round(box.width * scale),
      height: Math.round(box.height * scale),
    });
    const score = (s: number) => Math.round(s * 1000) / 1000;
    const faces = found.faces
      .filter((f) => f.score >= minConfidence)
      .sort((a, b) => b.score - a.score)
      .map((f) => ({ score: score(f.score), box: toImage(f.box) }));
    const objects = found.objects
      .filter((o) => o.score >= minConfidence)
      .sort((a, b) => b.score - a.score)
      .map((o) => ({ label: o.label, score: score(o.score), box: toImage(o.box) }));
    const objectCounts: Record<string, number> = {};
    for (const o of objects) objectCounts[o.label] = (objectCounts[o.label] ?? 0) + 1;
    return { file_index: fileIndex, width: header.width, height: header.height, faces, objects, face_count: faces.length, object_counts: objectCounts };
  }

  async function run(request: ImageAnalysisRequest, runOptions: RunOptions = {}): Promise<EngineResult> {
    assertFileCount(request.files, limits.maxFiles);
    const minConfidence = request.settings.min_confidence ?? DEFAULT_MIN_CONFIDENCE;
    const images = await eachImage(request.files, IMAGE_DETECTION_ACCEPTED_TYPES, runOptions, (file, index) => detectOne(file, index, minConfidence));
    const document: ImageDetectionDocument = {
      object: "image_detection_result",
      detectors: "BlazeFace (faces), CenterNet COCO (objects); @vladmandic/human on TensorFlow.js WASM",
      min_confidence: minConfidence,
      images,
    };
    return jsonResult("image", images.length, document, "image-detection.json");
  }

  return {
    operation: "image_analysis",
    unit: "image",
    measure,
    run,
    warmUp: async () => {
      await loadHumanDetector();
    },
    close: () => Promise.resolve(),
  };
}
