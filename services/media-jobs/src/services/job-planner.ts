import { tariffOf, type CatalogModel, type FileRecord, type MediaOperation, type QuotedOperation, type UnitTariff } from "@meter/contracts";
import { InternalCallError, InternalHttpError } from "@meter/service-kit";
import { InputFileRefused, type InputFiles } from "../adapters/input-files.adapter";
import type { EngineInputs, MediaEngines } from "../adapters/media-engines.adapter";
import type { JobInputFile, JobPlan, JobTariff } from "../domain/job-record";
import { MediaErrors } from "../errors";
import {
  LimitExceededError,
  UnsupportedMediaTypeError,
  billableCharacters,
  parseEditPrompt,
  parseModelSettings,
  parseSettings,
  type Quantity,
} from "@meter/media-engines";
import { admissionError, isEngineError } from "./engine-errors";
import { billableQuantity, costOf } from "./job-pricing";

export interface CatalogView {
  readonly ready: boolean;
  get(id: string): CatalogModel | undefined;
}

/** What a job or a quote asks for, whichever endpoint it came from. */
export interface PlanInput {
  operation: QuotedOperation;
  model: string;
  settings?: Record<string, unknown> | undefined;
  prompt?: string | undefined;
  fileIds?: string[] | undefined;
  input?: string | undefined;
  maxCost?: number | undefined;
}

/** A priced request: what a quote shows and a job is held at; `job` is what a worker will run. */
export interface PricedPlan {
  model: string;
  operation: QuotedOperation;
  tariff: JobTariff;
  quantity: number;
  estimatedCost: number;
  /** Absent for image generation, which is quoted only. */
  job?: JobPlan;
}

/** Which request fields each operation uses (a quote may carry any of them; a job endpoint only its own). */
const FIELDS: Record<QuotedOperation, { prompt: boolean; files: boolean; input: boolean }> = {
  image_generation: { prompt: true, files: false, input: false },
  image_edit: { prompt: true, files: true, input: false },
  image_analysis: { prompt: false, files: true, input: false },
  ocr: { prompt: false, files: true, input: false },
  text_analysis: { prompt: false, files: false, input: true },
};

/**
 * Validates and prices a media request, the same for a quote and a job, before anything is reserved:
 * the model exists (404) and has a tariff for the operation (422 `cost_unknown` when it has none or is
 * disabled), this service runs it (503), its settings and prompt are the model's (400), the files are
 * the caller's (404) and verified (409), of types (415) and sizes (413) it takes; then the engine
 * measures the quantity (422 `cost_unknown` when it cannot) and the estimate is checked against the
 * caller's maximum (422 `max_cost_exceeded`).
 */
export class JobPlanner {
  constructor(
    private readonly deps: {
      catalog: CatalogView;
      engines: MediaEngines;
      files: InputFiles;
      /** Bytes of input files one job may take in all. */
      maxInputBytes: number;
    },
  ) {}

  async plan(userId: string, input: PlanInput): Promise<PricedPlan> {
    const { catalog } = this.deps;
    if (!catalog.ready) throw MediaErrors.catalogNotLoaded();
    const entry = catalog.get(input.model);
    if (!entry) throw MediaErrors.modelNotFound(input.model);
    const tariff = tariffOf(entry, input.operation);
    if (!tariff) {
      throw MediaErrors.costUnknown(input.model, entry.enabled ? `it has no ${input.operation} tariff` : "the model is disabled");
    }
    checkFields(input);
    const plan =
      input.operation === "image_generation"
        ? this.generationQuote(input, tariff)
        : await this.measured(userId, { ...input, operation: input.operation }, entry, tariff);
    if (input.maxCost !== undefined && plan.estimatedCost > input.maxCost) throw MediaErrors.maxCostExceeded(plan.estimatedCost, input.maxCost);
    return plan;
  }

  /** Image generation is quoted from its tariff alone: one image (or request) per job, or the prompt's characters. */
  private generationQuote(input: PlanInput, tariff: UnitTariff): PricedPlan {
    if (input.settings && Object.keys(input.settings).length > 0) throw MediaErrors.fieldNotUsed("settings", "image_generation");
    let quantity: number;
    if (tariff.unit === "request" || tariff.unit === "image") quantity = 1;
    else if (tariff.unit === "character" && input.prompt !== undefined) quantity = billableCharacters(input.prompt);
    else throw MediaErrors.costUnknown(input.model, `image generation priced per ${tariff.unit} cannot be counted from a prompt`);
    return { model: input.model, operation: "image_generation", ...priced(input.model, tariff, quantity) };
  }

  private async measured(userId: string, input: PlanInput & { operation: MediaOperation }, entry: CatalogModel, tariff: UnitTariff): Promise<PricedPlan> {
    const { operation, model } = input;
    const resolved = this.deps.engines.resolve(entry, operation);
    if (!resolved) throw MediaErrors.modelUnavailable(`model "${model}" cannot run ${operation} on this service`);
    // One provider whose key this process has is enough: the others are passed over like refusals.
    if (resolved.kind === "upstream" && !this.deps.engines.canCall(resolved.providers)) {
      throw MediaErrors.modelUnavailable(`the upstream of "${model}" is not configured`);
    }
    const { definition } = resolved;
    try {
      const settings =
        resolved.kind === "local"
          ? (parseModelSettings(resolved.id, input.settings) as Record<string, unknown>)
          : (parseSettings(definition, model, input.settings) as Record<string, unknown>);
      // The local engine's grammar reads an edit's prompt; an upstream model takes it as written.
      const edit = resolved.kind === "local" && operation === "image_edit" && input.prompt !== undefined ? parseEditPrompt(input.prompt) : undefined;
      const prompt = resolved.kind === "upstream" && operation === "image_edit" ? input.prompt : undefined;
      if (operation === "image_edit" && input.prompt === undefined && input.fileIds) throw MediaErrors.fieldRequired("prompt", "for an image edit");
      const files = await this.inputFiles(userId, definition, input);
      const inputs: EngineInputs = {
        files: files.data,
        settings,
        ...(input.input !== undefined ? { input: input.input } : {}),
        ...(edit ? { edit } : {}),
        ...(prompt !== undefined ? { prompt } : {}),
      };
      // An edit is sold per request: quoted without its file, it is one request like any other.
      const measured: Quantity =
        operation === "image_edit" && files.records.length === 0
          ? { unit: "request", quantity: 1 }
          : await this.deps.engines.measure(resolved, tariff.unit, inputs);
      const quantity = billableQuantity(tariff.unit, measured, Math.max(files.records.length, 1));
      const engineName = resolved.kind === "local" ? resolved.id : "upstream";
      if (quantity === undefined) throw MediaErrors.costUnknown(model, `its tariff is per ${tariff.unit}, which ${engineName} does not count`);
      const price = priced(model, tariff, quantity);
      const job: JobPlan = {
        operation,
        engine: engineName,
        ...(resolved.kind === "upstream" ? { upstream: { providers: resolved.providers } } : {}),
        tariff: price.tariff,
        quantity,
        settings,
        files: files.records,
        ...(input.input !== undefined ? { input: input.input } : {}),
        ...(edit ? { edit } : {}),
        ...(prompt !== undefined ? { prompt } : {}),
      };
      return { model, operation, ...price, job };
    } catch (e) {
      throw refusalOf(e, model);
    }
  }

  /**
   * The request's files, each checked before any byte is read (the user's and verified, of a type and
   * number the model takes, within the job's byte budget), then read for the engine to measure.
   */
  private async inputFiles(
    userId: string,
    definition: { operation: MediaOperation; acceptedMimeTypes: readonly string[]; limits: { maxFiles?: number } },
    input: PlanInput,
  ): Promise<{ records: JobInputFile[]; data: EngineInputs["files"] }> {
    const ids = input.fileIds ?? [];
    if (ids.length === 0) {
      if (FIELDS[definition.operation].files && definition.operation !== "image_edit")
        throw MediaErrors.fieldRequired("file_id or file_ids", `for ${definition.operation}`);
      if (definition.operation === "text_analysis" && input.input === undefined) throw MediaErrors.fieldRequired("input", "for text_analysis");
      return { records: [], data: [] };
    }
    const maxFiles = definition.limits.maxFiles;
    if (maxFiles !== undefined && ids.length > maxFiles) {
      throw new LimitExceededError(
        "files",
        maxFiles,
        ids.length,
        `model ${input.model} takes at most ${maxFiles} file${maxFiles > 1 ? "s" : ""} per job, got ${ids.length}`,
      );
    }
    const verified: FileRecord[] = await this.deps.files.verified(userId, ids);
    const records = verified.map((f): JobInputFile => ({ id: f.id, mimeType: f.mime_type, sizeBytes: f.size_bytes, filename: f.filename }));
    records.forEach((file, index) => {
      if (!definition.acceptedMimeTypes.includes(file.mimeType)) {
        throw new UnsupportedMediaTypeError(file.mimeType, definition.acceptedMimeTypes, index);
      }
    });
    const bytes = records.reduce((sum, f) => sum + f.sizeBytes, 0);
    if (bytes > this.deps.maxInputBytes) throw MediaErrors.inputTooLarge(bytes, this.deps.maxInputBytes);
    const data = await Promise.all(records.map((file) => this.deps.files.read(userId, file)));
    return { records, data };
  }
}

/** The refusals of the engine and of the files service, as the client sees them; anything else as it is. */
function refusalOf(e: unknown, model: string): unknown {
  if (isEngineError(e)) return admissionError(e, model);
  if (e instanceof InputFileRefused) return e.code === "file_not_found" ? MediaErrors.fileNotFound(e.fileId) : MediaErrors.fileNotVerified(e.fileId);
  // The files service did not answer, or not as it should: nothing is reserved, and the client may retry.
  if (e instanceof InternalCallError || e instanceof InternalHttpError) return MediaErrors.filesUnavailable();
  return e;
}

function priced(model: string, tariff: UnitTariff, quantity: number): { tariff: JobTariff; quantity: number; estimatedCost: number } {
  const estimatedCost = costOf(tariff.price_per_unit_microrub, quantity);
  if (estimatedCost === undefined) throw MediaErrors.costUnknown(model, `${quantity} ${tariff.unit}s at its price is beyond any balance`);
  return { tariff: { unit: tariff.unit, price_per_unit_microrub: tariff.price_per_unit_microrub }, quantity, estimatedCost };
}

/** A field the operation does not use is refused rather than ignored: the caller expects it to matter. */
function checkFields(input: PlanInput): void {
  const uses = FIELDS[input.operation];
  if (!uses.prompt && input.prompt !== undefined) throw MediaErrors.fieldNotUsed("prompt", input.operation);
  if (!uses.files && input.fileIds !== undefined) throw MediaErrors.fieldNotUsed("file_id", input.operation);
  if (!uses.input && input.input !== undefined) throw MediaErrors.fieldNotUsed("input", input.operation);
}
