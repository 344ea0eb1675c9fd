import type { ChatQuoteRequest } from "@meter/contracts";
import type { UpstreamKeys } from "@meter/upstreams";
import { TextErrors } from "../errors";
import { normalizeQuote, planText, type CatalogView } from "./text-plan";

/** How long a quote is good for (spec: 30 seconds); the tariff is checked again at submission. */
export const QUOTE_VALIDITY_S = 30;

/** The estimate a request would be held at, without a hold, a model call or a record. */
export class QuoteService {
  constructor(
    private readonly catalog: CatalogView,
    private readonly defaultMaxTokens: number,
    private readonly keys: UpstreamKeys,
  ) {}

  quote(body: ChatQuoteRequest) {
    const text = normalizeQuote(body, this.defaultMaxTokens);
    const plan = planText("messages", this.catalog, body.model, text, this.keys);
    if (body.max_cost_microrub !== undefined && plan.estimatedCost > body.max_cost_microrub) {
      throw TextErrors.maxCostExceeded(plan.estimatedCost, body.max_cost_microrub);
    }
    const now = Date.now();
    return {
      object: "quote" as const,
      model: body.model,
      estimated_cost_microrub: plan.estimatedCost,
      input_tokens: plan.inputTokensEstimate,
      max_output_tokens: text.maxTokens,
      expires_at: new Date(now + QUOTE_VALIDITY_S * 1000).toISOString(),
      valid_for_s: QUOTE_VALIDITY_S,
    };
  }
}
