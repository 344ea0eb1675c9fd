import {
  type CatalogModel,
  upstreamKeyEnvRefusal,
  withUpstreamCapabilities,
  type ModelUpsert,
  type Operations,
  type Provider,
  type RoutedProvider,
} from "@meter/contracts";
import { BillingErrors } from "../errors";
import type { CatalogRepository } from "./catalog.repository";

type Row = {
  id: string;
  enabled: boolean;
  displayName: string | null;
  provider: unknown;
  operations: unknown;
  createdAt: Date;
  updatedAt: Date;
};

/**
 * The model catalog and its tariffs. Services keep a copy refreshed every few seconds (and at once on
 * `billing.catalog.changed`), so a change applies to requests accepted after it; a hold already placed
 * keeps the price it was placed at.
 */
export class CatalogService {
  constructor(
    private readonly models: CatalogRepository,
    /** UPSTREAM_KEY_ENV_PATTERN: the names `provider.api_key_env` may take (besides never naming our own settings). */
    private readonly upstreamKeyEnvPattern: RegExp,
  ) {}

  async upsert(id: string, input: ModelUpsert): Promise<{ model: CatalogModel; created: boolean }> {
    // ModelUpsert has one of the two.
    const providers: RoutedProvider[] = input.providers ?? [input.provider!];
    for (const p of providers) {
      const refusal = p.api_key_env && upstreamKeyEnvRefusal(p.api_key_env, this.upstreamKeyEnvPattern);
      if (refusal) throw BillingErrors.upstreamKeyEnvRefused(refusal);
    }
    const { row, created } = await this.models.upsert(id, {
      enabled: input.enabled,
      displayName: input.display_name ?? null,
      provider: providers as object,
      // An upstream media model's capabilities are its kind's (docs/api.md, "Media on upstream models") unless the entry states them.
      operations: withUpstreamCapabilities(input.operations, providers) as object,
    });
    return { model: render(row), created };
  }

  async get(id: string): Promise<CatalogModel> {
    const row = await this.models.find(id);
    if (!row) throw BillingErrors.modelNotFound(id);
    return render(row);
  }

  async list(): Promise<CatalogModel[]> {
    const rows = await this.models.list();
    return rows.map(render);
  }

  /**
   * `GET /v1/models`: enabled models and their tariffs, never the provider behind them. Each entry
   * carries the fields both official SDKs read (OpenAI: created, owned_by; Anthropic: type, display_name).
   */
  async published() {
    const data = (await this.list()).filter((m) => m.enabled).map(publicEntry);
    return { object: "list" as const, data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  /** `GET /v1/models/{id}`: one published model, as both SDKs' `models.retrieve()` read it. */
  async publishedOne(id: string) {
    const model = await this.get(id);
    if (!model.enabled) throw BillingErrors.modelNotFound(id);
    return publicEntry(model);
  }
}

function publicEntry(m: CatalogModel) {
  return {
    id: m.id,
    object: "model" as const,
    type: "model" as const,
    display_name: m.display_name ?? m.id,
    created: Math.floor(new Date(m.created_at).getTime() / 1000),
    created_at: m.created_at,
    owned_by: "meter",
    operations: m.operations,
  };
}

function render(row: Row): CatalogModel {
  // The column holds the list; rows written before there were several providers hold one object.
  const providers: RoutedProvider[] = Array.isArray(row.provider) ? (row.provider as RoutedProvider[]) : [row.provider as Provider];
  const { priority: _priority, weight: _weight, rpm: _rpm, tpm: _tpm, ...first } = providers[0]!;
  return {
    id: row.id,
    enabled: row.enabled,
    display_name: row.displayName,
    provider: first,
    providers,
    operations: row.operations as Operations,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
