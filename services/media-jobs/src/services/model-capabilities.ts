import type { MediaCapabilities } from "@meter/contracts";
import { z } from "zod";
import { LOCAL_MODELS, SUPPORTED_INSTRUCTIONS, type LocalModelDefinition, type LocalModelId } from "@meter/media-engines";

/**
 * What a built-in model takes, as the catalog publishes it beside its tariff (`GET /v1/models`): its
 * settings as JSON Schema, the file types and the limits of a job. Written into the catalog seed from
 * the registry (`pnpm --filter @meter/media-jobs catalog:capabilities`), and a test keeps the two equal.
 */
export function capabilitiesOf(id: LocalModelId): MediaCapabilities {
  const model: LocalModelDefinition = LOCAL_MODELS[id];
  const { limits } = model;
  return {
    description: model.description,
    settings: z.toJSONSchema(model.settings) as Record<string, unknown>,
    ...(model.acceptedMimeTypes.length > 0 ? { accepted_mime_types: [...model.acceptedMimeTypes] } : {}),
    ...(model.operation === "image_edit" ? { instructions: [...SUPPORTED_INSTRUCTIONS] } : {}),
    limits: {
      ...(limits.maxFiles !== undefined ? { max_files: limits.maxFiles } : {}),
      ...(limits.maxPagesPerDocument !== undefined ? { max_pages_per_document: limits.maxPagesPerDocument } : {}),
      ...(limits.maxInputCharacters !== undefined ? { max_input_characters: limits.maxInputCharacters } : {}),
      ...(limits.maxInputPixels !== undefined ? { max_input_pixels: limits.maxInputPixels } : {}),
    },
  };
}
