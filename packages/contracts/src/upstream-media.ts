import { z } from "zod";
import { CHAT_PROVIDER_KINDS, type MediaCapabilities, type Operations, type Provider, type ProviderKind } from "./catalog";
import type { Operation } from "./scopes";

/** What an upstream media model takes, enforced by media-jobs before the hold and published in the catalog. */
export interface UpstreamMediaDefinition {
  operation: "image_edit" | "image_analysis" | "text_analysis";
  description: string;
  settings: z.ZodObject;
  /** One line per accepted setting, for error messages. */
  settingsHelp: readonly string[];
  acceptedMimeTypes: readonly string[];
  limits: {
    maxFiles?: number;
    /** Pages read from one PDF or TIFF, each sent as an image. */
    maxPagesPerDocument?: number;
    maxInputCharacters?: number;
    maxPromptCharacters?: number;
    /** Bytes of one input file as uploaded (the upstream's own limit). */
    maxFileBytes?: number;
  };
}

/** The output budget of one analysis call when the job names none: what the operator pays upstream at most. */
export const DEFAULT_ANALYSIS_OUTPUT_TOKENS = 1024;

const analysisOutput = z.int().min(16).max(4096);

/** OpenAI's Images API edits (gpt-image-1): the job's prompt as written, one image in. */
const IMAGE_EDIT: UpstreamMediaDefinition = {
  operation: "image_edit",
  description: "Generative image editing from a free-text instruction (an Images API edit model)",
  settings: z.strictObject({
    size: z.enum(["auto", "1024x1024", "1536x1024", "1024x1536"]).optional(),
    quality: z.enum(["auto", "low", "medium", "high"]).optional(),
    background: z.enum(["auto", "transparent", "opaque"]).optional(),
    output_format: z.enum(["png", "jpeg", "webp"]).optional(),
  }),
  settingsHelp: [
    "size: auto | 1024x1024 | 1536x1024 | 1024x1536",
    "quality: auto | low | medium | high",
    "background: auto | transparent | opaque",
    "output_format: png | jpeg | webp",
  ],
  acceptedMimeTypes: ["image/png", "image/jpeg", "image/webp"],
  limits: { maxFiles: 1, maxPromptCharacters: 32_000, maxFileBytes: 50 * 1024 * 1024 },
};

/** A vision chat model describing each image (a PDF's or TIFF's pages each as an image). */
const IMAGE_ANALYSIS: UpstreamMediaDefinition = {
  operation: "image_analysis",
  description: "What is in each image, described by a vision model (PDF and TIFF pages are read as images)",
  settings: z.strictObject({
    prompt: z.string().min(1).max(4_000).optional(),
    max_output_tokens: analysisOutput.optional(),
  }),
  settingsHelp: ["prompt: the instruction for each image (1-4000 characters)", `max_output_tokens: 16-4096 (default ${DEFAULT_ANALYSIS_OUTPUT_TOKENS})`],
  acceptedMimeTypes: ["image/png", "image/jpeg", "image/webp", "image/gif", "image/tiff", "application/pdf"],
  limits: { maxFiles: 10, maxPagesPerDocument: 10, maxFileBytes: 50 * 1024 * 1024 },
};

/** A chat model analysing a text as instructed. */
const TEXT_ANALYSIS: UpstreamMediaDefinition = {
  operation: "text_analysis",
  description: "Text analysis by a language model, as `settings.instructions` ask",
  settings: z.strictObject({
    instructions: z.string().min(1).max(4_000).optional(),
    max_output_tokens: analysisOutput.optional(),
  }),
  settingsHelp: ["instructions: what to find in the text (1-4000 characters)", `max_output_tokens: 16-4096 (default ${DEFAULT_ANALYSIS_OUTPUT_TOKENS})`],
  acceptedMimeTypes: [],
  limits: { maxInputCharacters: 100_000 },
};

/** The definition of an upstream kind's media operation; undefined when the kind cannot serve it upstream. */
export function upstreamMediaDefinition(kind: ProviderKind, operation: Operation): UpstreamMediaDefinition | undefined {
  if (kind === "openai-images") return operation === "image_edit" ? IMAGE_EDIT : undefined;
  if (!(CHAT_PROVIDER_KINDS as readonly ProviderKind[]).includes(kind)) return undefined;
  if (operation === "image_analysis") return IMAGE_ANALYSIS;
  if (operation === "text_analysis") return TEXT_ANALYSIS;
  return undefined;
}

/** What `GET /v1/models` shows of an upstream media model. */
export function upstreamMediaCapabilities(definition: UpstreamMediaDefinition): MediaCapabilities {
  const { limits } = definition;
  return {
    description: definition.description,
    settings: z.toJSONSchema(definition.settings) as Record<string, unknown>,
    ...(definition.acceptedMimeTypes.length > 0 ? { accepted_mime_types: [...definition.acceptedMimeTypes] } : {}),
    limits: {
      ...(limits.maxFiles !== undefined ? { max_files: limits.maxFiles } : {}),
      ...(limits.maxPagesPerDocument !== undefined ? { max_pages_per_document: limits.maxPagesPerDocument } : {}),
      ...(limits.maxInputCharacters !== undefined ? { max_input_characters: limits.maxInputCharacters } : {}),
      ...(limits.maxPromptCharacters !== undefined ? { max_prompt_characters: limits.maxPromptCharacters } : {}),
      ...(limits.maxFileBytes !== undefined ? { max_file_bytes: limits.maxFileBytes } : {}),
    },
  };
}

/**
 * A catalog entry's tariffs with the capabilities of its upstream media operations filled in where the
 * entry gives none, so `GET /v1/models` shows what an upstream model takes as it does for a built-in one.
 */
export function withUpstreamCapabilities(operations: Operations, providers: readonly Provider[]): Operations {
  const first = providers[0];
  if (!first || first.kind === "local") return operations;
  const filled: Record<string, unknown> = { ...operations };
  for (const operation of ["image_edit", "image_analysis", "text_analysis"] as const) {
    const tariff = operations[operation];
    const definition = upstreamMediaDefinition(first.kind, operation);
    if (tariff && !tariff.capabilities && definition) filled[operation] = { ...tariff, capabilities: upstreamMediaCapabilities(definition) };
  }
  return filled as Operations;
}
