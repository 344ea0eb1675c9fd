import { z } from "zod";

export const Scope = z.enum(["text", "images", "files:write", "files:read", "mcp:read", "mcp:invoke"]);
export type Scope = z.infer<typeof Scope>;
export const ALL_SCOPES: readonly Scope[] = Scope.options;

/** What a model can be used for; each has a tariff in the catalog. */
export const Operation = z.enum(["text", "image_generation", "image_edit", "image_analysis", "ocr", "text_analysis"]);
export type Operation = z.infer<typeof Operation>;

/** The right an operation needs (docs/api.md "Keys and scopes"). */
export const SCOPE_OF_OPERATION: Record<Operation, Scope> = {
  text: "text",
  image_generation: "images",
  image_edit: "images",
  image_analysis: "images",
  ocr: "text",
  text_analysis: "text",
};

export const Unit = z.enum(["request", "image", "character", "page", "file", "document", "second", "minute"]);
export type Unit = z.infer<typeof Unit>;
