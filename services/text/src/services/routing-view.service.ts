import { providerIdOf, providersOf, type CatalogModel, type TextModelProviders, type TextRequestView } from "@meter/contracts";
import { AppError } from "@meter/service-kit";
import type { ProviderState } from "@meter/upstreams";
import type { TextRequestRepository } from "../repositories/text-request.repository";

export interface RoutingViewDeps {
  catalog: { list(): CatalogModel[] };
  health: { states(): Promise<Map<string, ProviderState>> };
  repo: Pick<TextRequestRepository, "findForOperator">;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PUBLIC_ID = /^(?:msg|resp)_([0-9a-f]{32})$/i;

/**
 * The operator's view of upstream routing (docs/api.md, "Several providers per model"): each text
 * model's providers with their shared health, and which provider served a request. Key holders never
 * reach it (the admin door only).
 */
export class RoutingViewService {
  constructor(private readonly deps: RoutingViewDeps) {}

  async providers(): Promise<TextModelProviders[]> {
    const states = await this.deps.health.states();
    return this.deps.catalog
      .list()
      .filter((m) => m.operations.text)
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((m) => {
        const listed = providersOf(m);
        // A model's only provider is called without a breaker (retried inline): it has no state of its own here.
        const routed = listed.length > 1;
        return {
          model: m.id,
          enabled: m.enabled,
          providers: listed.map((p) => {
            const id = providerIdOf(p);
            const s = states.get(id);
            return {
              id,
              kind: p.kind,
              host: p.base_url ? new URL(p.base_url).host : null,
              upstream_model: p.upstream_model ?? null,
              priority: p.priority ?? 0,
              weight: p.weight ?? 1,
              rpm: p.rpm ?? null,
              tpm: p.tpm ?? null,
              state: routed ? (s?.state ?? "closed") : null,
              consecutive_failures: routed ? (s?.failures ?? 0) : 0,
              open_until: routed ? (s?.openUntil?.toISOString() ?? null) : null,
              minute_calls: s?.minuteCalls ?? 0,
              minute_tokens: s?.minuteTokens ?? 0,
            };
          }),
        };
      });
  }

  /** `id`: the record's id (a hold's owner_ref) or the public answer's (`msg_<hex>`, `resp_<hex>`). */
  async request(id: string): Promise<TextRequestView> {
    const recordId = recordIdOf(id);
    const found = recordId ? await this.deps.repo.findForOperator(recordId) : undefined;
    if (!found) throw new AppError("not_found", `no text request ${id}`);
    const { record: r, refused, completedAt } = found;
    const listed = r.plan.providers ?? [r.plan.provider];
    const only = listed.length === 1 ? providerIdOf(listed[0]!) : undefined;
    // A model's only provider is not recorded on the request (no write on that path): it is the one.
    const sentTo = r.provider ?? (only && r.attempts > 0 ? only : null);
    const refusedBy = only && r.state === "failed" && r.error?.code === "upstream_error" && refused.length === 0 ? [only] : refused;
    return {
      object: "text_request",
      id: r.id,
      request_id: r.requestId,
      endpoint: r.endpoint === "messages" ? "/v1/messages" : "/v1/responses",
      model: r.model,
      organization_id: r.organizationId,
      key_id: r.keyId,
      status: r.state === "reserving" ? "in_progress" : r.state,
      attempts: r.attempts,
      estimated_cost_microrub: r.estimatedCost,
      cost_microrub: r.state === "completed" ? r.cost : r.state === "failed" ? 0 : null,
      usage: r.result?.usage ?? null,
      error: r.error,
      served_by: r.state === "completed" ? sentTo : null,
      sent_to: sentTo,
      refused_by: refusedBy,
      providers: listed.map(providerIdOf),
      created_at: r.createdAt.toISOString(),
      completed_at: completedAt?.toISOString() ?? null,
    };
  }
}

function recordIdOf(id: string): string | undefined {
  if (UUID.test(id)) return id.toLowerCase();
  const hex = PUBLIC_ID.exec(id)?.[1]?.toLowerCase();
  return hex ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` : undefined;
}
