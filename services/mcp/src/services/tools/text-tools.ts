import { z } from "zod";
import type { PublicApi } from "../../domain/public-api";
import type { Caller, ToolOutcome } from "../../domain/tool-call";
import { ToolFailures } from "../../errors";
import { newIdempotencyKey, sendPaid } from "./api-calls";
import { apiBody, defineTool, PAID, type Tool } from "./tool";

const Billing = z.looseObject({ status: z.string(), cost_microrub: z.number().nullable() });
const MessageAnswer = z.looseObject({
  id: z.string(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
  stop_reason: z.string().nullish(),
  billing: Billing.optional(),
});
const ResponseAnswer = z.looseObject({
  id: z.string(),
  output: z.array(z.looseObject({ content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })).optional() })),
  billing: Billing.optional(),
});

type PaidText = { kind: "completed"; body: unknown } | { kind: "pending"; outcome: ToolOutcome };

/**
 * One paid text call through the public API. 200 is the answer; 202, or an answer lost after the
 * request may have arrived, is "pending": the request goes on (its hold kept) and the same call with
 * the same idempotency key later returns its result, charged once (CONTRACT.md "Idempotency").
 */
async function paidText(api: PublicApi, caller: Caller, tool: string, path: string, args: Record<string, unknown>, key: string): Promise<PaidText> {
  const res = await sendPaid(api, caller, { method: "POST", path, body: apiBody(args), idempotencyKey: key });
  if (res !== "unknown" && res.status >= 400) throw ToolFailures.fromApi(res).with({ idempotency_key: key });
  if (res !== "unknown" && res.status === 200) return { kind: "completed", body: res.body };
  const retry = res === "unknown" ? 2 : (res.retryAfterS ?? 2);
  const pending = res === "unknown" ? { status: "reconciling" } : z.looseObject({ status: z.string() }).catch({ status: "in_progress" }).parse(res.body);
  return {
    kind: "pending",
    outcome: {
      structured: { idempotency_key: key, status: "pending", pending },
      summary: `${tool} is not finished yet (nothing is lost, the reservation is kept): call ${tool} again in ${retry} s with the same arguments and idempotency_key "${key}" to get its result; it is charged once`,
    },
  };
}

function answerOf<T>(schema: z.ZodType<T>, body: unknown, key: string): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw ToolFailures.internal().with({ idempotency_key: key });
  return parsed.data;
}

function costOf(billing: z.infer<typeof Billing> | undefined): string {
  return billing?.cost_microrub != null ? `, cost ${billing.cost_microrub} microrub` : "";
}

/** The paid text tools (`mcp:invoke` + `text`): `/v1/messages` and `/v1/responses` with the caller's key. */
export function textTools(deps: { api: PublicApi }): Tool[] {
  const { api } = deps;
  return [
    defineTool({
      name: "create_message",
      title: "Generate text (Messages)",
      description:
        'Runs a text model on a conversation and returns its answer; paid from your balance and the key\'s daily budget (quote it first with quote_text). messages alternate user and assistant turns; content is a string or text blocks, as in /v1/messages. Give an idempotency_key to make retries safe; if the result has status "pending", call again with the same arguments and key.',
      annotations: PAID,
      run: async (args, caller) => {
        const key = args.idempotency_key ?? newIdempotencyKey();
        const result = await paidText(api, caller, "create_message", "/v1/messages", args, key);
        if (result.kind === "pending") return result.outcome;
        const message = answerOf(MessageAnswer, result.body, key);
        const text = message.content.map((b) => (b.type === "text" ? (b.text ?? "") : "")).join("");
        return {
          structured: { idempotency_key: key, status: "completed", text, message },
          summary: `create_message completed (${message.stop_reason ?? "end_turn"}${costOf(message.billing)})`,
        };
      },
    }),
    defineTool({
      name: "create_response",
      title: "Generate text (Responses)",
      description:
        'Runs a text model on an input (a string, or role/content messages) with optional instructions and returns its answer; paid from your balance and the key\'s daily budget. Give an idempotency_key to make retries safe; if the result has status "pending", call again with the same arguments and key.',
      annotations: PAID,
      run: async (args, caller) => {
        const key = args.idempotency_key ?? newIdempotencyKey();
        const result = await paidText(api, caller, "create_response", "/v1/responses", args, key);
        if (result.kind === "pending") return result.outcome;
        const response = answerOf(ResponseAnswer, result.body, key);
        const text = response.output
          .flatMap((item) => item.content ?? [])
          .map((c) => (c.type === "output_text" ? (c.text ?? "") : ""))
          .join("");
        return {
          structured: { idempotency_key: key, status: "completed", text, response },
          summary: `create_response completed${costOf(response.billing)}`,
        };
      },
    }),
  ];
}
