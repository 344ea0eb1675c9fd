import { z } from "zod";
import { Microrub } from "./money";

/**
 * What the operator sees of text's upstream routing (docs/api.md, "Several providers per model"):
 * the providers of each model with their health, and which provider served a request. Served by the
 * text service under `/admin/v1/text`; never shown to key holders.
 */

/** A provider's circuit breaker: `open` (passed over until `open_until`), `half_open` (its cooldown ran out; the next request makes one trial call), `closed`. */
export const BreakerState = z.enum(["closed", "open", "half_open"]);
export type BreakerState = z.infer<typeof BreakerState>;

export const ProviderStatus = z.object({
  /** `<kind>:<host>/<upstream_model>#<api_key_env>`, as in records, logs and /metrics. */
  id: z.string(),
  kind: z.string(),
  host: z.string().nullable(),
  upstream_model: z.string().nullable(),
  priority: z.int(),
  weight: z.int(),
  rpm: z.int().nullable(),
  tpm: z.int().nullable(),
  /** Null for a model's only provider: it has no breaker (it is retried inline, docs/api.md "Pending (202)"). */
  state: BreakerState.nullable(),
  /** Failures in a row (refusals, no answer); an answer sets it back to 0. */
  consecutive_failures: z.int(),
  open_until: z.string().nullable(),
  /** Calls and tokens counted this clock minute against `rpm` / `tpm` (all text replicas). */
  minute_calls: z.int(),
  minute_tokens: z.int(),
});
export type ProviderStatus = z.infer<typeof ProviderStatus>;

export const TextModelProviders = z.object({
  model: z.string(),
  enabled: z.boolean(),
  providers: z.array(ProviderStatus),
});
export type TextModelProviders = z.infer<typeof TextModelProviders>;

/** One text request as the operator sees it: its outcome and the providers it went to. */
export const TextRequestView = z.object({
  object: z.literal("text_request"),
  /** The record id: a hold's `owner_ref`; the public answer's id is `msg_`/`resp_` and its hex. */
  id: z.uuid(),
  request_id: z.string().nullable(),
  endpoint: z.enum(["/v1/messages", "/v1/responses"]),
  model: z.string(),
  organization_id: z.uuid(),
  key_id: z.uuid(),
  status: z.enum(["in_progress", "completed", "failed"]),
  attempts: z.int(),
  estimated_cost_microrub: Microrub,
  cost_microrub: Microrub.nullable(),
  usage: z.object({ input_tokens: z.int(), output_tokens: z.int() }).nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** The provider that answered (completed), else null. */
  served_by: z.string().nullable(),
  /** The provider it was last sent to: the only one a later attempt may call. */
  sent_to: z.string().nullable(),
  /** Providers that refused it before anything ran (in the order asked). */
  refused_by: z.array(z.string()),
  /** The model's providers as the request was accepted (it keeps them, like its price). */
  providers: z.array(z.string()),
  created_at: z.string(),
  completed_at: z.string().nullable(),
});
export type TextRequestView = z.infer<typeof TextRequestView>;
