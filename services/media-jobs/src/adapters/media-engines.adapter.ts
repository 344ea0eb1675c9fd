import {
  providersOf,
  upstreamMediaDefinition,
  type CatalogModel,
  type MediaOperation,
  type RoutedProvider,
  type Unit,
  type UpstreamMediaDefinition,
} from "@meter/contracts";
import {
  LOCAL_MODELS,
  isLocalModelId,
  measureUpstream,
  runUpstream,
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
  type UpstreamInputFile,
  type UpstreamMediaResult,
  type UpstreamRoute,
} from "@meter/media-engines";
import { hasKeyFor, type UpstreamKeys } from "@meter/upstreams";

/** A catalog entry's model for one operation: a built-in engine, or upstream providers (docs/api.md, "Media on upstream models"). */
export type ResolvedModel =
  | { kind: "local"; id: LocalModelId; definition: LocalModelDefinition }
  | { kind: "upstream"; definition: UpstreamMediaDefinition; providers: RoutedProvider[] };

/** What a job hands its engine: the inputs of its operation and the model's settings as parsed. */
export interface EngineInputs {
  files: UpstreamInputFile[];
  settings: Record<string, unknown>;
  input?: string;
  edit?: EditPlan;
  /** An upstream edit's prompt, as written. */
  prompt?: string;
}

/**
 * The job service's one door to the models: which engine a catalog entry names, and its measure and run
 * in the shape of each operation. A local model is named by its provider block, `{kind: "local",
 * upstream_model: "<registry id>"}` (or the public id itself, when that is a registry id), so an entry
 * copied under another id and tariff runs the same engine. A model on upstream providers runs through
 * @meter/media-engines' upstream engines, its calls routed by the caller (UpstreamRoute).
 */
export class MediaEngines {
  constructor(
    private readonly engines: LocalEngines,
    private readonly keys: UpstreamKeys,
  ) {}

  /** The model behind a catalog entry for the operation, if this service runs it. */
  resolve(entry: CatalogModel, operation: MediaOperation): ResolvedModel | undefined {
    const providers = providersOf(entry);
    const first = providers[0]!;
    if (first.kind === "local") {
      const id = first.upstream_model ?? entry.id;
      if (!isLocalModelId(id)) return undefined;
      const definition: LocalModelDefinition = LOCAL_MODELS[id];
      return definition.operation === operation ? { kind: "local", id, definition } : undefined;
    }
    const definition = upstreamMediaDefinition(first.kind, operation);
    // The catalog refuses a kind that cannot serve the operation; an entry from before that rule is not run.
    if (!definition || providers.some((p) => upstreamMediaDefinition(p.kind, operation) !== definition)) return undefined;
    return { kind: "upstream", definition, providers };
  }

  /** Whether this process holds the key of at least one of the providers (the others are passed over like refusals). */
  canCall(providers: readonly RoutedProvider[]): boolean {
    return providers.some((p) => hasKeyFor(p, this.keys));
  }

  /** The billable quantity, before anything is reserved; `unit` is the tariff's. */
  measure(model: ResolvedModel, unit: Unit, inputs: EngineInputs): Promise<Quantity> {
    if (model.kind === "upstream") return measureUpstream(model.definition, unit, { model: "", files: inputs.files, ...upstreamFields(inputs) });
    return this.local(model.id, model.definition.operation, inputs, (engine, request) => engine.measure(request));
  }

  /** Runs a local engine (JobPlan.engine is its registry id). */
  run(engineId: string, operation: MediaOperation, inputs: EngineInputs, options: RunOptions): Promise<EngineResult> {
    return this.local(engineId, operation, inputs, (engine, request) => engine.run(request, options));
  }

  /** Runs a job on an upstream model, each call through `route`. */
  runUpstream(
    definition: UpstreamMediaDefinition,
    model: string,
    inputs: EngineInputs,
    options: RunOptions & { route: UpstreamRoute },
  ): Promise<UpstreamMediaResult> {
    return runUpstream(
      definition,
      { model, files: inputs.files, ...upstreamFields(inputs) },
      {
        route: options.route,
        keys: this.keys,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      },
    );
  }

  warmUp(): Promise<void> {
    return this.engines.warmUp();
  }

  close(): Promise<void> {
    return this.engines.close();
  }

  private local<T>(
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

function upstreamFields(inputs: EngineInputs): { settings: Record<string, unknown>; prompt?: string; input?: string } {
  return {
    settings: inputs.settings,
    ...(inputs.prompt !== undefined ? { prompt: inputs.prompt } : {}),
    ...(inputs.input !== undefined ? { input: inputs.input } : {}),
  };
}

function requestOf(operation: MediaOperation, inputs: EngineInputs): OcrRequest | ImageEditRequest | ImageAnalysisRequest | TextAnalysisRequest {
  const files: InputFile[] = inputs.files;
  switch (operation) {
    case "ocr":
      return { files, settings: inputs.settings } satisfies OcrRequest;
    case "image_analysis":
      return { files, settings: inputs.settings as ImageAnalysisRequest["settings"] } satisfies ImageAnalysisRequest;
    case "text_analysis":
      return { input: inputs.input ?? "", settings: inputs.settings } satisfies TextAnalysisRequest;
    case "image_edit": {
      const [file] = files;
      if (!file || !inputs.edit) throw new Error("an image edit needs a file and a plan");
      return { file, plan: inputs.edit } satisfies ImageEditRequest;
    }
  }
}
