import { z } from "zod";
import { UpstreamError } from "../../upstream-error";
import type { ChatResult } from "../chat-provider";
import { usageOf } from "../usage";

/** The fields of a response object we read; other output items (reasoning, tool calls) are skipped. */
const ResponseObject = z.looseObject({
  id: z.string().optional(),
  status: z.string().optional(),
  output: z.array(
    z.looseObject({
      type: z.string(),
      content: z.array(z.looseObject({ type: z.string(), text: z.unknown().optional(), refusal: z.unknown().optional() })).optional(),
    }),
  ),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
  error: z.looseObject({ message: z.string().optional(), code: z.string().nullish() }).nullish(),
  usage: z.unknown().optional(),
});

export function fromResponsesBody(body: unknown, status: number): ChatResult {
  const parsed = ResponseObject.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError("unknown", `openai-responses: the ${status} answer is not a response (${parsed.error.issues[0]?.message ?? "bad shape"})`, status);
  }
  const response = parsed.data;
  // A missing status is a server that only answers finished responses (some compatible ones omit it).
  const state = response.status ?? "completed";
  if (state === "failed") {
    const why = response.error?.message ?? response.error?.code ?? "no reason given";
    throw new UpstreamError("failed", `openai-responses: the response failed: ${why}`, status);
  }
  if (state !== "completed" && state !== "incomplete") {
    // queued / in_progress / cancelled: it may still run, or have run, upstream.
    throw new UpstreamError("unknown", `openai-responses: the response is "${state}", not finished`, status);
  }
  const text = response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => item.content ?? [])
    .flatMap((part) => {
      if (part.type === "output_text" && typeof part.text === "string") return [part.text];
      if (part.type === "refusal" && typeof part.refusal === "string") return [part.refusal];
      return [];
    })
    .join("");
  const usage = response.usage as { input_tokens?: unknown; output_tokens?: unknown } | null | undefined;
  return {
    text,
    stopReason: state === "incomplete" && response.incomplete_details?.reason === "max_output_tokens" ? "max_tokens" : "end_turn",
    usage: usageOf(usage?.input_tokens, usage?.output_tokens),
    ...(response.id ? { upstreamId: response.id } : {}),
  };
}
