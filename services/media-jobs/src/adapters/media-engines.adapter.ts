import type { MediaOperation, Provider } from "@meter/contracts";
import {
  LOCAL_MODELS,
  isLocalModelId,
  type EditPlan,
  type EngineResult,
  type ImageAnalysisRequest,
  type ImageEditRequest,
  type InputFile,
  type LocalEngines,
  type LocalModelDefinition,
  type LocalModelId,
  type MediaEngine,
  type OcrRequest,
  type Quantity,
  type RunOptions,
  type TextAnalysisRequest,
} from "@meter/media-engines";

export interface ResolvedModel {
  id: LocalModelId;
  definition: LocalModelDefinition;
}

/** What a job hands its engine: the inputs of its operation and the model's settings as parsed. */
export interface EngineInputs {
  files: InputFile[];
  settings: Record<string, unknown>;
  input?: string;
  edit?: EditPlan;
}

/**
 * The job service's one door to the models: which engine a catalog entry names, and its measure and run
 * in the shape of each operation. A local model is named by its provider block, `{kind: "local",
 * upstream_model: "<registry id>"}` (or the public id itself, when that is a registry id), so an entry
 * copied under another id and tariff runs the same engine. An upstream provider's adapter would be
 * resolved here too.
 */
export class MediaEngines {
  constructor(private readonly engines: LocalEngines) {}

  /** The local model behind a catalog entry, if this service runs one for the operation. */
  resolve(modelId: string, provider: Provider, operation: MediaOperation): ResolvedModel | undefined {
    const id = provider.upstream_model ?? modelId;
    if (provider.kind !== "local" || !isLocalModelId(id)) return undefined;
    const definition: LocalModelDefinition = LOCAL_MODELS[id];
    return definition.operation === operation ? { id, definition } : undefined;
  }

  /** The billable quantity, before anything is reserved. */
  measure(engineId: string, operation: MediaOperation, inputs: EngineInputs): Promise<Quantity> {
    return this.call(engineId, operation, inputs, (engine, request) => engine.measure(request));
  }

  run(engineId: string, operation: MediaOperation, inputs: EngineInputs, options: RunOptions): Promise<EngineResult> {
    return this.call(engineId, operation, inputs, (engine, request) => engine.run(request, options));
  }

  warmUp(): Promise<void> {
    return this.engines.warmUp();
  }

  close(): Promise<void> {
    return this.engines.close();
  }

  private call<T>(
    engineId: string,
    operation: MediaOperation,
    inputs: EngineInputs,
    use: (engine: MediaEngine<unknown>, request: unknown) => Promise<T>,
  ): Promise<T> {
    if (!isLocalModelId(engineId)) return Promise.reject(new Error(`no local engine "${engineId}"`));
    // The registry pairs each id with an engine of the id's operation; the request is built for that operation.
    const engine = this.engines.engine(engineId) as MediaEngine<unknown>;
    if (engine.operation !== operation) return Promise.reject(new Error(`engine "${engineId}" runs ${engine.operation}, not ${operation}`));
    return use(engine, requestOf(operation, inputs));
  }
}

function requestOf(operation: MediaOperation, inputs: EngineInputs): OcrRequest | ImageEditRequest | ImageAnalysisRequest | TextAnalysisRequest {
  switch (operation) {
    case "ocr":
      return { files: inputs.files, settings: inputs.settings } satisfies OcrRequest;
    case "image_analysis":
      return { files: inputs.files, settings: inputs.settings as ImageAnalysisRequest["settings"] } satisfies ImageAnalysisRequest;
    case "text_analysis":
      return { input: inputs.input ?? "", settings: inputs.settings } satisfies TextAnalysisRequest;
    case "image_edit": {
      const [file] = inputs.files;
      if (!file || !inputs.edit) throw new Error("an image edit needs a file and a plan");
      return { file, plan: inputs.edit } satisfies ImageEditRequest;
    }
  }
}
