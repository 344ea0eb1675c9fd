import { z } from "zod";
import { UpstreamError } from "../../upstream-error";
import type { ChatResult, ChatUsage } from "../chat-provider";
import { tokenCount, usageOf } from "../usage";

/** The fields of a Messages API answer we read; everything else is ignored. */
const AnthropicMessage = z.looseObject({
  id: z.string().optional(),
  content: z.array(z.looseObject({ type: z.string(), text: z.unknown().optional() })),
  stop_reason: z.string().nullish(),
  usage: z.unknown().optional(),
});

export function fromAnthropicBody(body: unknown, status: number): ChatResult {
  const parsed = AnthropicMessage.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError("unknown", `anthropic: the ${status} answer is not a message (${parsed.error.issues[0]?.message ?? "bad shape"})`, status);
  }
  const message = parsed.data;
  const text = message.content
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("");
  return {
    text,
    // end_turn, stop_sequence, and the rest (refusal, pause_turn, tool_use) all ended the answer before the limit.
    stopReason: message.stop_reason === "max_tokens" ? "max_tokens" : "end_turn",
    usage: anthropicUsage(message.usage),
    ...(message.id ? { upstreamId: message.id } : {}),
  };
}

/** Prompt-cache reads and writes are billed input tokens that `input_tokens` leaves out. */
function anthropicUsage(usage: unknown): ChatUsage | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const base = usageOf(u.input_tokens, u.output_tokens);
  if (!base) return undefined;
  let input = base.input_tokens;
  for (const field of ["cache_creation_input_tokens", "cache_read_input_tokens"]) {
    const v = u[field];
    if (v === undefined || v === null) continue;
    const n = tokenCount(v);
    if (n === undefined) return undefined;
    input += n;
  }
  return { input_tokens: input, output_tokens: base.output_tokens };
}
