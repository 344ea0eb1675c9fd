import { DEFAULT_ANALYSIS_OUTPUT_TOKENS, type RoutedProvider, type Unit, type UpstreamMediaDefinition } from "@meter/contracts";
import { chatProviderFor, editImage, IMAGE_EDIT_SETTINGS, type ChatResult, type ChatUsage, type ImageEditSetting, type UpstreamKeys } from "@meter/upstreams";
import sharp from "sharp";
import { InvalidInputError, LimitExceededError, QuantityUnknownError, UpstreamFailedError, throwIfAborted } from "../errors";
import { imageHeader, isPdf, sharpInput } from "../input";
import { jsonResult } from "../json-result";
import { PdfDocument } from "../ocr/pdf-document";
import type { EngineResult, InputFile, Progress, Quantity } from "../provider";
import { billableCharacters } from "../text-analysis/text-analysis.engine";
import { pagesOf } from "./page-images";

/** An input file of an upstream job, with the id the result names it by. */
export type UpstreamInputFile = InputFile & { fileId?: string };

export interface UpstreamMediaInput {
  /** The public model id, named in the result document; each provider's call names its own upstream model. */
  model: string;
  files: UpstreamInputFile[];
  /** Image edits: the client's instruction, as written. */
  prompt?: string;
  /** Text analysis: the text. */
  input?: string;
  /** As parsed against the definition's schema. */
  settings: Record<string, unknown>;
}

/**
 * How a job's upstream calls are made: routed over the model's providers, each call's provider pinned on
 * the job before it is sent, with the providers' shared health (the job runner's). Resolves with the
 * answer; rejects with UpstreamFailedError when no provider produced one.
 */
export interface UpstreamRoute {
  call<T>(send: (provider: RoutedProvider, timeoutMs: number) => Promise<T>, usedTokens?: (answer: T) => number | undefined): Promise<T>;
}

export interface UpstreamRunDeps {
  route: UpstreamRoute;
  keys: UpstreamKeys;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

/** The result of an upstream job, with the tokens the upstream reported (for the operator: our cost, not the tariff). */
export interface UpstreamMediaResult extends EngineResult {
  upstreamUsage?: ChatUsage;
}

/** The instruction sent with each image when the job gives no `settings.prompt`. */
export const DEFAULT_IMAGE_PROMPT =
  "Describe this image: what it shows, any text in it (quoted as written), and anything notable about it. Answer in the language of any text it contains, else in English.";
/** The instruction sent with a text when the job gives no `settings.instructions`. */
export const DEFAULT_TEXT_INSTRUCTIONS =
  "Analyse the text below: its language, its topic in one sentence, its sentiment, and the people, organisations and places it names.";

/**
 * The billable quantity of an upstream job, before anything is reserved: an edit is one request; an
 * analysis counts its images (each page of a PDF or TIFF is one, all sent), its files, or the characters of
 * its text. The definition's limits are checked here too, so a job that would be refused upstream is
 * refused before the hold.
 */
export async function measureUpstream(definition: UpstreamMediaDefinition, unit: Unit, input: UpstreamMediaInput): Promise<Quantity> {
  checkLimits(definition, input);
  switch (definition.operation) {
    case "image_edit":
      for (const [index, file] of input.files.entries()) await imageHeader(file, index);
      return { unit: "request", quantity: 1 };
    case "text_analysis":
      return unit === "request" ? { unit: "request", quantity: 1 } : { unit: "character", quantity: billableCharacters(input.input ?? "") };
    case "image_analysis": {
      let images = 0;
      for (const [index, file] of input.files.entries()) images += await pageCount(file, index, definition.limits.maxPagesPerDocument);
      return unit === "page" ? { unit: "page", quantity: images } : { unit: "image", quantity: images };
    }
  }
}

/** Runs an upstream job: each of its calls routed through `deps.route`, its one result file built here. */
export async function runUpstream(definition: UpstreamMediaDefinition, input: UpstreamMediaInput, deps: UpstreamRunDeps): Promise<UpstreamMediaResult> {
  checkLimits(definition, input);
  switch (definition.operation) {
    case "image_edit":
      return runEdit(input, deps);
    case "image_analysis":
      return runImageAnalysis(definition, input, deps);
    case "text_analysis":
      return runTextAnalysis(input, deps);
  }
}

function checkLimits(definition: UpstreamMediaDefinition, input: UpstreamMediaInput): void {
  const { limits } = definition;
  if (limits.maxFiles !== undefined && input.files.length > limits.maxFiles) {
    throw new LimitExceededError("files", limits.maxFiles, input.files.length, `this model takes at most ${limits.maxFiles} files per job`);
  }
  input.files.forEach((file, index) => {
    if (limits.maxFileBytes !== undefined && file.data.length > limits.maxFileBytes) {
      throw new LimitExceededError("file_bytes", limits.maxFileBytes, file.data.length, `file ${index} is over the model's ${limits.maxFileBytes} bytes`);
    }
  });
  const prompt = input.prompt === undefined ? 0 : billableCharacters(input.prompt);
  if (limits.maxPromptCharacters !== undefined && prompt > limits.maxPromptCharacters) {
    throw new LimitExceededError(
      "prompt_characters",
      limits.maxPromptCharacters,
      prompt,
      `the prompt is over the model's ${limits.maxPromptCharacters} characters`,
    );
  }
  const characters = input.input === undefined ? 0 : billableCharacters(input.input);
  if (limits.maxInputCharacters !== undefined && characters > limits.maxInputCharacters) {
    throw new LimitExceededError("characters", limits.maxInputCharacters, characters, `the input is over the model's ${limits.maxInputCharacters} characters`);
  }
}

async function pageCount(file: InputFile, index: number, maxPages: number | undefined): Promise<number> {
  let pages: number;
  if (isPdf(file)) {
    const doc = await PdfDocument.open(file.data, index);
    pages = doc.pageCount;
    await doc.destroy();
  } else {
    await imageHeader(file, index);
    pages = file.mimeType === "image/tiff" ? ((await sharp(file.data, sharpInput({ limitInputPixels: false })).metadata()).pages ?? 1) : 1;
  }
  if (pages === 0) throw new QuantityUnknownError("unreadable", `file ${index} has no pages`, index);
  if (maxPages !== undefined && pages > maxPages) {
    throw new LimitExceededError("pages", maxPages, pages, `file ${index} has ${pages} pages; this model reads at most ${maxPages} per document`);
  }
  return pages;
}

async function runEdit(input: UpstreamMediaInput, deps: UpstreamRunDeps): Promise<UpstreamMediaResult> {
  const file = input.files[0];
  if (!file || input.prompt === undefined) throw new InvalidInputError("an image edit needs a file and a prompt");
  const settings = Object.fromEntries(
    IMAGE_EDIT_SETTINGS.flatMap((name) => (typeof input.settings[name] === "string" ? [[name, input.settings[name]]] : [])),
  ) as Partial<Record<ImageEditSetting, string>>;
  deps.onProgress?.({ done: 0, total: 1, unit: "request" });
  const edited = await deps.route.call(
    (provider, timeoutMs) =>
      editImage(
        provider,
        deps.keys,
        {
          model: provider.upstream_model ?? input.model,
          prompt: input.prompt!,
          image: { bytes: file.data, filename: file.filename ?? "image", mimeType: file.mimeType },
          settings,
        },
        { timeoutMs, ...(deps.signal ? { signal: deps.signal } : {}) },
      ),
    (answer) => (answer.usage ? answer.usage.input_tokens + answer.usage.output_tokens : undefined),
  );
  const format = await imageFormatOf(edited.image);
  deps.onProgress?.({ done: 1, total: 1, unit: "request" });
  return {
    unit: "request",
    quantity: 1,
    data: edited.image,
    mimeType: `image/${format}`,
    filename: `edited.${format === "jpeg" ? "jpg" : format}`,
    ...(edited.usage ? { upstreamUsage: edited.usage } : {}),
  };
}

/** The result of one analysis call as the result document lists it. */
interface AnalysisEntry {
  file_id?: string;
  /** 1-based page of a PDF or TIFF; absent for a single image. */
  page?: number;
  text: string;
}

async function runImageAnalysis(definition: UpstreamMediaDefinition, input: UpstreamMediaInput, deps: UpstreamRunDeps): Promise<UpstreamMediaResult> {
  const prompt = typeof input.settings.prompt === "string" ? input.settings.prompt : DEFAULT_IMAGE_PROMPT;
  const maxTokens = outputBudget(input.settings);
  const pages: { file: UpstreamInputFile; index: number; page: number; of: number }[] = [];
  for (const [index, file] of input.files.entries()) {
    const of = await pageCount(file, index, definition.limits.maxPagesPerDocument);
    for (let page = 1; page <= of; page++) pages.push({ file, index, page, of });
  }
  const results: AnalysisEntry[] = [];
  const usage = new UsageSum();
  deps.onProgress?.({ done: 0, total: pages.length, unit: "image" });
  for (const { file, index, page, of } of pages) {
    throwIfAborted(deps.signal);
    const image = (await pagesOf(file, index, [page]))[0]!;
    const answer = await callChat(deps, input.model, { text: prompt, images: [image] }, maxTokens);
    usage.add(answer.usage);
    results.push({ ...(file.fileId ? { file_id: file.fileId } : {}), ...(of > 1 ? { page } : {}), text: answer.text });
    deps.onProgress?.({ done: results.length, total: pages.length, unit: "image" });
  }
  return withUsage(jsonResult("image", pages.length, { object: "analysis", model: input.model, results }, "analysis.json"), usage);
}

async function runTextAnalysis(input: UpstreamMediaInput, deps: UpstreamRunDeps): Promise<UpstreamMediaResult> {
  const text = input.input ?? "";
  const instructions = typeof input.settings.instructions === "string" ? input.settings.instructions : DEFAULT_TEXT_INSTRUCTIONS;
  deps.onProgress?.({ done: 0, total: 1, unit: "task" });
  const answer = await callChat(deps, input.model, { system: instructions, text }, outputBudget(input.settings));
  deps.onProgress?.({ done: 1, total: 1, unit: "task" });
  const usage = new UsageSum();
  usage.add(answer.usage);
  return withUsage(
    jsonResult("character", billableCharacters(text), { object: "analysis", model: input.model, results: [{ text: answer.text }] }, "analysis.json"),
    usage,
  );
}

function outputBudget(settings: Record<string, unknown>): number {
  return typeof settings.max_output_tokens === "number" ? settings.max_output_tokens : DEFAULT_ANALYSIS_OUTPUT_TOKENS;
}

/** One chat call of an analysis, routed; an empty answer is no analysis (the upstream failed us, nothing is charged). */
async function callChat(
  deps: UpstreamRunDeps,
  model: string,
  message: { system?: string; text: string; images?: { mediaType: string; data: string }[] },
  maxTokens: number,
): Promise<ChatResult> {
  const answer = await deps.route.call(
    (provider, timeoutMs) =>
      chatProviderFor(provider, deps.keys).complete(
        {
          model: provider.upstream_model ?? model,
          ...(message.system ? { system: message.system } : {}),
          messages: [{ role: "user", text: message.text, ...(message.images ? { images: message.images } : {}) }],
          maxTokens,
        },
        { timeoutMs, ...(deps.signal ? { signal: deps.signal } : {}) },
      ),
    (result) => (result.usage ? result.usage.input_tokens + result.usage.output_tokens : undefined),
  );
  if (answer.text.trim() === "") throw new UpstreamFailedError("upstream_error", "the upstream answered with no text", true);
  return answer;
}

/** The format of the image an upstream returned; bytes that are no image are the upstream's failure. */
async function imageFormatOf(bytes: Buffer): Promise<"png" | "jpeg" | "webp"> {
  let format: string | undefined;
  try {
    format = (await sharp(bytes, sharpInput()).metadata()).format;
  } catch (e) {
    throw new UpstreamFailedError("upstream_error", `the upstream's image cannot be read: ${(e as Error).message}`, true, { cause: e });
  }
  if (format === "png" || format === "jpeg" || format === "webp") return format;
  throw new UpstreamFailedError("upstream_error", `the upstream answered a ${format ?? "file of no known type"}, not a PNG, JPEG or WebP image`, true);
}

class UsageSum {
  private input = 0;
  private output = 0;
  private reported = false;

  add(usage: ChatUsage | undefined): void {
    if (!usage) return;
    this.reported = true;
    this.input += usage.input_tokens;
    this.output += usage.output_tokens;
  }

  get value(): ChatUsage | undefined {
    return this.reported ? { input_tokens: this.input, output_tokens: this.output } : undefined;
  }
}

function withUsage(result: EngineResult, usage: UsageSum): UpstreamMediaResult {
  const value = usage.value;
  return value ? { ...result, upstreamUsage: value } : result;
}
