import { z } from "zod";
import { Microrub } from "./money";

/**
 * Public text request schemas (spec "Message request", "Responses request", "Text quote"; docs/api.md
 * "Text"). Strict: an unknown field is 400 `unknown_field`, and known-but-unsupported shapes
 * (streaming, non-text content) are 400 `unsupported_parameter`, both before anything is reserved.
 */

const unsupported = (what: string) => ({ message: what, params: { code: "unsupported_parameter" } });

/** A content block: only `{type: "text", text}`; other block types are not offered. */
const TextBlock = z
  .looseObject({ type: z.string() })
  .superRefine((b, ctx) => {
    if (b.type !== "text") ctx.addIssue({ code: "custom", ...unsupported(`content blocks of type "${b.type}" are not supported; only "text"`) });
  })
  .pipe(z.strictObject({ type: z.literal("text"), text: z.string() }));

const Content = z.union([z.string(), z.array(TextBlock).min(1)], {
  error: "must be a string or an array of text blocks",
});

const Stream = z
  .boolean()
  .optional()
  .refine((v) => v !== true, unsupported("streaming is not supported; omit stream or set it to false"));

const MaxTokens = z.number().int().min(1).max(1_000_000);
const Temperature = z.number().min(0).max(2);

export const MessagesRequest = z.strictObject({
  model: z.string().min(1),
  messages: z.array(z.strictObject({ role: z.enum(["user", "assistant"]), content: Content })).min(1),
  max_tokens: MaxTokens,
  system: Content.optional(),
  temperature: Temperature.optional(),
  stream: Stream,
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

/** An input item of /v1/responses: the OpenAI easy-input message, optionally typed `message`. */
const ResponsesInputContentPart = z
  .looseObject({ type: z.string() })
  .superRefine((p, ctx) => {
    if (p.type !== "input_text" && p.type !== "output_text") {
      ctx.addIssue({ code: "custom", ...unsupported(`input content of type "${p.type}" is not supported; only text`) });
    }
  })
  .pipe(z.strictObject({ type: z.enum(["input_text", "output_text"]), text: z.string() }));

const ResponsesInputItem = z.strictObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(ResponsesInputContentPart).min(1)]),
});

export const ResponsesRequest = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string().min(1), z.array(ResponsesInputItem).min(1)]),
  instructions: z.string().optional(),
  max_output_tokens: MaxTokens.optional(),
  temperature: Temperature.optional(),
  metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
  stream: Stream,
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

/**
 * `POST /v1/chat/quote`: messages may carry the `system` role here. A `/v1/messages` body is also a valid
 * quote (its top-level `system` is priced as input; `temperature` and `stream` are checked as there,
 * and do not change the price), so a client can quote exactly what it is about to send.
 */
export const ChatQuoteRequest = z.strictObject({
  model: z.string().min(1),
  messages: z.array(z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: Content })).min(1),
  max_tokens: MaxTokens.optional(),
  system: Content.optional(),
  temperature: Temperature.optional(),
  stream: Stream,
  max_cost_microrub: Microrub.optional(),
});
export type ChatQuoteRequest = z.infer<typeof ChatQuoteRequest>;

export const BillingStatus = z.enum(["reserved", "settled", "released"]);
export type BillingStatus = z.infer<typeof BillingStatus>;

export interface BillingObject {
  status: BillingStatus;
  estimated_cost_microrub: number;
  cost_microrub: number | null;
}
