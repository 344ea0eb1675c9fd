import { readFile } from "node:fs/promises";
import path from "node:path";
import type { ModelArtifacts, ModelJSON, WeightsManifestConfig } from "@tensorflow/tfjs-core/dist/io/types";
import { EngineUnavailableError } from "../errors";

/**
 * Faces and objects with @vladmandic/human (MIT): its models ship inside the npm package (models/, ~28 MB)
 * and run on TensorFlow.js' WebAssembly backend, whose .wasm files ship inside @tensorflow/tfjs-backend-wasm.
 * Nothing is downloaded at install or run time. Human's default Node build needs tfjs-node (a native binary
 * fetched at install time), so its `human.node-wasm.js` build is loaded instead.
 *
 * Measured here (2 cores, single-threaded WASM, SIMD): load + warm-up ~0.3 s, ~200-300 ms of CPU per image
 * (BlazeFace + CenterNet on a 640-1280 px image), ~300 MB RSS for the process with the models loaded.
 */

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Detections {
  faces: { score: number; box: Box }[];
  objects: { label: string; score: number; box: Box }[];
}

interface HumanResult {
  face: { score: number; box: [number, number, number, number] }[];
  object: { score: number; label: string; box: [number, number, number, number] }[];
}

interface Tensor {
  dispose(): void;
}

interface HumanInstance {
  tf: {
    tensor3d(values: Uint8Array, shape: [number, number, number], dtype: "int32"): Tensor;
    getBackend(): string;
    io: {
      registerLoadRouter(router: (url: string | string[]) => { load(): Promise<ModelArtifacts> } | null): void;
      getModelArtifactsForJSON(
        json: ModelJSON,
        loadWeights: (manifest: WeightsManifestConfig) => Promise<[WeightsManifestConfig[number]["weights"], ArrayBuffer]>,
      ): Promise<ModelArtifacts>;
    };
  };
  load(): Promise<void>;
  warmup(): Promise<unknown>;
  detect(input: Tensor): Promise<HumanResult>;
}

type HumanModule = { Human: new (config: Record<string, unknown>) => HumanInstance };

/** Lowest score Human itself keeps; requests filter above it with their own threshold. */
export const DETECTOR_FLOOR = 0.2;

const humanDist = path.dirname(require.resolve("@vladmandic/human"));
const modelsDir = path.join(humanDist, "..", "models");
const wasmDir = path.join(path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm")), path.sep);

/**
 * Serves `file://<models dir>/...` URLs to tfjs from the package's files. tfjs' own file:// loader lives in
 * tfjs-node; without this, Human would try `fetch`, which has no file: scheme in Node.
 */
function modelFileRouter(io: HumanInstance["tf"]["io"], prefix: string) {
  return (url: string | string[]) => {
    const target = Array.isArray(url) ? url[0] : url;
    if (typeof target !== "string" || !target.startsWith(prefix)) return null;
    const file = path.join(modelsDir, decodeURIComponent(target.slice(prefix.length)));
    return {
      load: async (): Promise<ModelArtifacts> => {
        const json = JSON.parse(await readFile(file, "utf8")) as ModelJSON;
        return io.getModelArtifactsForJSON(json, async (manifest) => {
          const buffers = await Promise.all(manifest.flatMap((group) => group.paths).map((p) => readFile(path.join(path.dirname(file), p))));
          const weights = Buffer.concat(buffers);
          return [manifest.flatMap((group) => group.weights), weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength)];
        });
      },
    };
  };
}

let loading: Promise<HumanInstance> | undefined;

/** The process's one Human instance, models loaded and warmed up. */
export function loadHumanDetector(): Promise<HumanInstance> {
  loading ??= (async () => {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of the package, not one of its exports
      const { Human } = require(path.join(humanDist, "human.node-wasm.js")) as HumanModule;
      const modelBase = `file://${modelsDir}/`;
      const human = new Human({
        backend: "wasm",
        wasmPath: wasmDir,
        modelBasePath: modelBase,
        debug: false,
        // Every call is a new image: no frame cache, no temporal filters (Human is built for video too).
        cacheSensitivity: 0,
        filter: { enabled: false },
        face: {
          enabled: true,
          detector: { rotation: false, maxDetected: 50, minConfidence: DETECTOR_FLOOR, skipFrames: 0 },
          mesh: { enabled: false },
          iris: { enabled: false },
          description: { enabled: false },
          emotion: { enabled: false },
          antispoof: { enabled: false },
          liveness: { enabled: false },
        },
        object: { enabled: true, minConfidence: DETECTOR_FLOOR, maxDetected: 50, skipFrames: 0 },
        body: { enabled: false },
        hand: { enabled: false },
        gesture: { enabled: false },
        segmentation: { enabled: false },
      });
      human.tf.io.registerLoadRouter(modelFileRouter(human.tf.io, modelBase));
      await human.load();
      await human.warmup();
      if (human.tf.getBackend() !== "wasm") throw new Error(`TensorFlow.js backend is ${human.tf.getBackend()}, not wasm`);
      return human;
    } catch (error) {
      loading = undefined;
      throw new EngineUnavailableError(`the face and object detector could not load: ${(error as Error).message}`, {}, { cause: error });
    }
  })();
  return loading;
}

/** Runs both detectors on RGB pixels; boxes are in the pixels' coordinates. */
export async function detect(human: HumanInstance, rgb: { data: Buffer; width: number; height: number }): Promise<Detections> {
  const tensor = human.tf.tensor3d(new Uint8Array(rgb.data.buffer, rgb.data.byteOffset, rgb.data.byteLength), [rgb.height, rgb.width, 3], "int32");
  try {
    const result = await human.detect(tensor);
    const box = ([x, y, width, height]: [number, number, number, number]): Box => ({ x, y, width, height });
    return {
      faces: result.face.map((f) => ({ score: f.score, box: box(f.box) })),
      objects: result.object.map((o) => ({ label: o.label, score: o.score, box: box(o.box) })),
    };
  } finally {
    tensor.dispose();
  }
}
