import { z } from "zod";
import { UpstreamError } from "../../upstream-error";
import type { ChatResult } from "../chat-provider";
import { usageOf } from "../usage";

const TextPart = z.looseObject({ type: z.string(), text: z.unknown().optional() });

/** The fields of a chat completion we read; everything else is ignored. */
const ChatCompletion = z.looseObject({
  id: z.string().optional(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          // null when the model refused or spent its whole budget before writing; some servers send parts.
          content: z.union([z.string(), z.array(TextPart)]).nullish(),
          refusal: z.string().nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.unknown().optional(),
});

export function fromChatCompletionsBody(body: unknown, status: number): ChatResult {
  const parsed = ChatCompletion.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError(
      "unknown",
      `openai-chat: the ${status} answer is not a chat completion (${parsed.error.issues[0]?.message ?? "bad shape"})`,
      status,
    );
  }
  const completion = parsed.data;
  const choice = completion.choices[0]!;
  const content = choice.message.content;
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content.flatMap((p) => (p.type === "text" && typeof p.text === "string" ? [p.text] : [])).join("")
        : (choice.message.refusal ?? "");
  const usage = completion.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  return {
    text,
    stopReason: choice.finish_reason === "length" ? "max_tokens" : "end_turn",
    usage: usageOf(usage?.prompt_tokens, usage?.completion_tokens),
    ...(completion.id ? { upstreamId: completion.id } : {}),
  };
}
