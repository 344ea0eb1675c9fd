import { z } from "zod";
import { Microrub } from "./money";
import { type Operation, Unit } from "./scopes";

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

/**
 * What a media model takes, published with its tariff so that `GET /v1/models` shows it: `settings` is
 * the JSON Schema of the request's `settings`, `limits` the most a job may ask for. Descriptive only:
 * the service that runs the model enforces its own rules (the catalog seed writes the built-in models'
 * capabilities from their registry, and a test keeps the two equal).
 */
export const MediaCapabilities = z.strictObject({
  description: z.string().min(1).max(500).optional(),
  settings: z.record(z.string(), z.unknown()),
  accepted_mime_types: z.array(z.string().min(1).max(255)).max(50).optional(),
  /** The instruction grammar of `prompt` (image editing), one line per instruction. */
  instructions: z.array(z.string().min(1).max(500)).max(100).optional(),
  limits: z
    .strictObject({
      max_files: z.int().positive().optional(),
      max_pages_per_document: z.int().positive().optional(),
      max_input_characters: z.int().positive().optional(),
      max_input_pixels: z.int().positive().optional(),
      max_prompt_characters: z.int().positive().optional(),
      max_file_bytes: z.int().positive().optional(),
    })
    .optional(),
});
export type MediaCapabilities = z.infer<typeof MediaCapabilities>;

export const UnitTariff = z.strictObject({
  unit: Unit,
  price_per_unit_microrub: Microrub,
  capabilities: MediaCapabilities.optional(),
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

/** `openai-images` is the Images API (image edits); the others speak chat protocols, and `local` is the built-in models. */
export const ProviderKind = z.enum(["anthropic", "openai-chat", "openai-responses", "openai-images", "local"]);
export type ProviderKind = z.infer<typeof ProviderKind>;

/** The provider kinds that speak a chat protocol: text, and the analysis of images and texts. */
export const CHAT_PROVIDER_KINDS = ["anthropic", "openai-chat", "openai-responses"] as const satisfies readonly ProviderKind[];

/**
 * Which provider kinds can serve each operation (docs/api.md, "Media on upstream models"). `local` is
 * the built-in models, each of one operation; the catalog refuses an entry whose provider cannot serve
 * one of its operations, naming the kinds that can.
 */
export const KINDS_OF_OPERATION: Record<Operation, readonly ProviderKind[]> = {
  text: [...CHAT_PROVIDER_KINDS, "local"],
  image_generation: ["openai-images", "local"],
  image_edit: ["openai-images", "local"],
  image_analysis: [...CHAT_PROVIDER_KINDS, "local"],
  ocr: ["local"],
  text_analysis: [...CHAT_PROVIDER_KINDS, "local"],
};

export const Provider = z.strictObject({
  kind: ProviderKind,
  /** http(s) only; private and loopback hosts are allowed (Ollama on localhost, vLLM inside a cluster). */
  base_url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
  upstream_model: z.string().min(1).optional(),
  /** Name of the environment variable that holds the upstream's API key; the key itself never enters the catalog. */
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, "an environment variable name")
    .optional(),
});
export type Provider = z.infer<typeof Provider>;

/**
 * One of a model's providers (docs/api.md, "Several providers per model"): lower `priority` is tried
 * first (0 when absent); among equal priorities requests are spread in proportion to `weight` (1 when
 * absent); `rpm` caps the calls sent to it per minute and `tpm` the tokens (each request counted at its
 * estimate until its usage is known), all text replicas together.
 */
export const RoutedProvider = Provider.extend({
  priority: z.int().min(0).max(1000).optional(),
  weight: z.int().min(1).max(1000).optional(),
  rpm: z.int().min(1).max(1_000_000).optional(),
  tpm: z.int().min(1).max(1_000_000_000).optional(),
});
export type RoutedProvider = z.infer<typeof RoutedProvider>;

/**
 * What names a provider to the operator (records, logs, metrics) and keys its health: the same kind,
 * host, upstream model and key are one provider, whichever models list it.
 */
export function providerIdOf(p: Provider): string {
  const host = p.base_url ? new URL(p.base_url).host : "";
  return `${p.kind}:${host}/${p.upstream_model ?? ""}${p.api_key_env ? `#${p.api_key_env}` : ""}`;
}

/** A model's providers: `providers` when the entry has the list, else its one `provider`. */
export function providersOf(m: { provider: Provider; providers?: RoutedProvider[] | undefined }): RoutedProvider[] {
  return m.providers && m.providers.length > 0 ? m.providers : [m.provider];
}

/**
 * Body of `PUT /admin/v1/models/{model_id}`: either `provider` (one) or `providers` (tried by priority,
 * spread by weight), never both.
 */
export const ModelUpsert = z
  .strictObject({
    enabled: z.boolean(),
    provider: Provider.optional(),
    providers: z.array(RoutedProvider).min(1).max(16).optional(),
    operations: Operations,
    display_name: z.string().min(1).max(200).optional(),
  })
  .superRefine((m, ctx) => {
    if ((m.provider === undefined) === (m.providers === undefined)) {
      ctx.addIssue({ code: "custom", path: ["providers"], message: "give either provider or providers" });
      return;
    }
    const [path, list] = m.providers ? (["providers", m.providers] as const) : (["provider", [m.provider!]] as const);
    const seen = new Set<string>();
    list.forEach((p, i) => {
      const at = path === "providers" ? [path, i] : [path];
      if (p.kind !== "local" && !p.base_url) ctx.addIssue({ code: "custom", path: [...at, "base_url"], message: "required for a remote provider" });
      // A base_url the URL check refused (e.g. "http://") is already an issue; naming it would throw.
      else if (p.base_url && !URL.canParse(p.base_url)) return;
      else if (seen.has(providerIdOf(p))) ctx.addIssue({ code: "custom", path: at, message: "the same provider is listed twice" });
      else seen.add(providerIdOf(p));
    });
    const operations = Object.keys(m.operations) as Operation[];
    // One issue per provider naming every operation it cannot serve: the error shows the first issue only.
    list.forEach((p, i) => {
      const refused = operations.filter((operation) => !KINDS_OF_OPERATION[operation].includes(p.kind));
      if (refused.length === 0) return;
      ctx.addIssue({
        code: "custom",
        path: path === "providers" ? [path, i, "kind"] : [path, "kind"],
        message: refused
          .map((operation) => `provider kind ${p.kind} cannot serve ${operation}; kinds that can: ${KINDS_OF_OPERATION[operation].join(", ")}`)
          .join(". "),
      });
    });
    for (const operation of operations) {
      // A media model runs on the built-in engines or on upstreams: its grammar, settings and limits are one or the other's.
      if (operation !== "text" && list.some((p) => p.kind === "local") && list.some((p) => p.kind !== "local")) {
        ctx.addIssue({ code: "custom", path: [path], message: `${operation} runs on local providers or on upstream ones, not on both` });
      }
    }
  });
export type ModelUpsert = z.infer<typeof ModelUpsert>;

/**
 * A catalog entry as services see it (internal: includes the providers). `provider` is the first of
 * `providers`, for the services that use one (media-jobs).
 */
export const CatalogModel = z.object({
  id: ModelId,
  enabled: z.boolean(),
  display_name: z.string().nullable(),
  provider: Provider,
  providers: z.array(RoutedProvider).optional(),
  operations: Operations,
  created_at: z.string(),
  updated_at: z.string(),
});
export type CatalogModel = z.infer<typeof CatalogModel>;

export const Catalog = z.object({ models: z.array(CatalogModel) });
export type Catalog = z.infer<typeof Catalog>;

/** The tariff of one operation of one model, or undefined when the cost is unknown. */
export function tariffOf<O extends Operation>(model: Pick<CatalogModel, "enabled" | "operations"> | undefined, operation: O): Operations[O] | undefined {
  if (!model || !model.enabled) return undefined;
  return model.operations[operation];
}
