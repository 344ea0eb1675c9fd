import { ModelUpsert, type MediaOperation } from "@meter/contracts";
import { isLocalModelId, LOCAL_MODELS } from "@meter/media-engines";
import { capabilitiesOf } from "./model-capabilities";

/**
 * The catalog seed with every built-in media model's capabilities as the registry declares them: each
 * entry whose provider is `local` and names a registry model (by `upstream_model`, else its own id) gets
 * them on the tariff of that model's operation. Other entries are left as they are.
 */
export function seedWithCapabilities(seed: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(seed).map(([id, raw]) => {
      const entry = ModelUpsert.parse(raw);
      // A media model runs on one provider: the first, when several are listed.
      const provider = entry.providers?.[0] ?? entry.provider;
      const engine = provider?.upstream_model ?? id;
      if (provider?.kind !== "local" || !isLocalModelId(engine)) return [id, raw];
      const operation: MediaOperation = LOCAL_MODELS[engine].operation;
      const tariff = entry.operations[operation];
      if (!tariff) return [id, raw];
      return [id, { ...(raw as object), operations: { ...entry.operations, [operation]: { ...tariff, capabilities: capabilitiesOf(engine) } } }];
    }),
  );
}
