import { z } from "zod";
import { Microrub } from "./money";
import { Operation, Unit } from "./scopes";

export const ModelId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/, "letters, digits and . _ : / - only");

export const TextTariff = z.strictObject({
  input_microrub_per_1k_tokens: Microrub,
  output_microrub_per_1k_tokens: Microrub,
});
export type TextTariff = z.infer<typeof TextTariff>;

export const UnitTariff = z.strictObject({
  unit: Unit,
  price_per_unit_microrub: Microrub,
});
export type UnitTariff = z.infer<typeof UnitTariff>;

/** Image editing is sold at a fixed price per request only (spec). */
export const ImageEditTariff = UnitTariff.extend({ unit: z.literal("request") });

export const Operations = z.strictObject({
  text: TextTariff.optional(),
  image_generation: UnitTariff.optional(),
  image_edit: ImageEditTariff.optional(),
  image_analysis: UnitTariff.optional(),
  ocr: UnitTariff.optional(),
  text_analysis: UnitTariff.optional(),
});
export type Operations = z.infer<typeof Operations>;

export const ProviderKind = z.enum(["anthropic", "openai-chat", "openai-responses", "local"]);
export type ProviderKind = z.infer<typeof ProviderKind>;

export const Provider = z.strictObject({
  kind: ProviderKind,
  base_url: z.url().optional(),
  upstream_model: z.string().min(1).optional(),
  /** Name of the environment variable that holds the upstream's API key; the key itself never enters the catalog. */
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, "an environment variable name")
    .optional(),
});
export type Provider = z.infer<typeof Provider>;

/** Body of `PUT /admin/v1/models/{model_id}`. */
export const ModelUpsert = z
  .strictObject({
    enabled: z.boolean(),
    provider: Provider,
    operations: Operations,
    display_name: z.string().min(1).max(200).optional(),
  })
  .superRefine((m, ctx) => {
    if (m.provider.kind !== "local" && !m.provider.base_url) {
      ctx.addIssue({ code: "custom", path: ["provider", "base_url"], message: "required for a remote provider" });
    }
  });
export type ModelUpsert = z.infer<typeof ModelUpsert>;

/** A catalog entry as services see it (internal: includes the provider). */
export const CatalogModel = z.object({
  id: ModelId,
  enabled: z.boolean(),
  display_name: z.string().nullable(),
  provider: Provider,
  operations: Operations,
  created_at: z.string(),
  updated_at: z.string(),
});
export type CatalogModel = z.infer<typeof CatalogModel>;

export const Catalog = z.object({ models: z.array(CatalogModel) });
export type Catalog = z.infer<typeof Catalog>;

/** The tariff of one operation of one model, or undefined when the cost is unknown. */
export function tariffOf<O extends Operation>(
  model: Pick<CatalogModel, "enabled" | "operations"> | undefined,
  operation: O,
): Operations[O] | undefined {
  if (!model || !model.enabled) return undefined;
  return model.operations[operation];
}
