import { SCOPE_OF_OPERATION, type KeyIdentity, type MediaQuote, type MediaQuoteRequest } from "@meter/contracts";
import { requireScope } from "@meter/service-kit";
import type { JobPlanner } from "./job-planner";

/** How long a quote is good for (spec: 30 seconds); the tariff is checked again when the job is submitted. */
export const QUOTE_VALIDITY_S = 30;

/** The estimate a job would be held at, computed by the very code that prices the job; nothing is reserved. */
export class QuoteService {
  constructor(private readonly planner: JobPlanner) {}

  async quote(identity: KeyIdentity, body: MediaQuoteRequest): Promise<MediaQuote> {
    requireScope(identity, SCOPE_OF_OPERATION[body.operation]);
    const plan = await this.planner.plan(identity.user_id, {
      operation: body.operation,
      model: body.model,
      settings: body.settings,
      prompt: body.prompt,
      fileIds: body.file_ids ?? (body.file_id !== undefined ? [body.file_id] : undefined),
      input: body.input,
      maxCost: body.max_cost_microrub,
    });
    return {
      object: "quote",
      model: plan.model,
      operation: plan.operation,
      unit: plan.tariff.unit,
      quantity: plan.quantity,
      price_per_unit_microrub: plan.tariff.price_per_unit_microrub,
      estimated_cost_microrub: plan.estimatedCost,
      expires_at: new Date(Date.now() + QUOTE_VALIDITY_S * 1000).toISOString(),
      valid_for_s: QUOTE_VALIDITY_S,
    };
  }
}
