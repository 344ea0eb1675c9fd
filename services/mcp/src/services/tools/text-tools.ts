import { z } from "zod";
import type { CreateResponseInput } from "@meter/contracts";
import type { PublicApi } from "../../domain/public-api";
import type { Caller, ToolOutcome } from "../../domain/tool-call";
import { ToolFailure, ToolFailures } from "../../errors";
import { newIdempotencyKey, readApi, sendPaid } from "./api-calls";
import { apiBody, defineTool, PAID, type Tool } from "./tool";

type CreateResponseArgs = z.infer<typeof CreateResponseInput>;

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

/** What the cap is checked against: the call's quote (`/v1/chat/quote`, the estimate the hold is placed at). */
export type QuoteBody = Record<string, unknown>;

/**
 * `max_cost_microrub` the way the media jobs apply it: the call is quoted with the cap first, and an
 * estimate above it ends the call (`max_cost_exceeded`) before the paid request is sent, so nothing is
 * reserved. The text endpoints price a request exactly as its quote does.
 */
async function checkCap(api: PublicApi, caller: Caller, quote: QuoteBody | undefined, key: string): Promise<void> {
  if (quote === undefined) return;
  try {
    await readApi(api, caller, { method: "POST", path: "/v1/chat/quote", body: quote });
  } catch (e) {
    throw e instanceof ToolFailure ? e.with({ idempotency_key: key }) : e;
  }
}

/**
 * One paid text call through the public API. 200 is the answer; 202, or an answer lost after the
 * request may have arrived, is "pending": the request goes on (its hold kept) and the same call with
 * the same idempotency key later returns its result, charged once (docs/api.md "Idempotency").
 */
async function paidText(api: PublicApi, caller: Caller, tool: string, path: string, body: Record<string, unknown>, key: string): Promise<PaidText> {
  const res = await sendPaid(api, caller, { method: "POST", path, body, idempotencyKey: key });
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

/** A /v1/responses body as the quote endpoint takes it: the same text, so the same estimate. */
function responsesQuote(args: CreateResponseArgs, cap: number): QuoteBody {
  const text = (content: string | { text: string }[]) => (typeof content === "string" ? content : content.map((p) => ({ type: "text", text: p.text })));
  const messages =
    typeof args.input === "string"
      ? [{ role: "user", content: args.input }]
      : args.input.map((item) => ({ role: item.role === "developer" ? "system" : item.role, content: text(item.content) }));
  return {
    model: args.model,
    messages,
    ...(args.instructions !== undefined ? { system: args.instructions } : {}),
    ...(args.max_output_tokens !== undefined ? { max_tokens: args.max_output_tokens } : {}),
    max_cost_microrub: cap,
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
        'Runs a text model (list_models with operation "text") on a conversation and returns its answer in text; paid from your balance and the key\'s daily budget. Quote it with quote_text and pass max_cost_microrub to cap it: above the cap it is refused with max_cost_exceeded before anything is reserved. Give an idempotency_key to make retries safe; if the result has status "pending", call again with the same arguments and key. An answer too long for one tool result comes as a link (full_result) and a preview.',
      annotations: PAID,
      run: async (args, caller) => {
        const key = args.idempotency_key ?? newIdempotencyKey();
        const { max_cost_microrub: cap, ...call } = apiBody(args);
        await checkCap(api, caller, cap === undefined ? undefined : { ...call, max_cost_microrub: cap }, key);
        const result = await paidText(api, caller, "create_message", "/v1/messages", call, key);
        if (result.kind === "pending") return result.outcome;
        const { content, ...message } = answerOf(MessageAnswer, result.body, key);
        const text = content.map((b) => (b.type === "text" ? (b.text ?? "") : "")).join("");
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
        'Runs a text model (list_models with operation "text") on an input (a string, or role/content messages) with optional instructions and returns its answer in text; paid from your balance and the key\'s daily budget. Pass max_cost_microrub to cap it: above the cap it is refused with max_cost_exceeded before anything is reserved. Give an idempotency_key to make retries safe; if the result has status "pending", call again with the same arguments and key. An answer too long for one tool result comes as a link (full_result) and a preview.',
      annotations: PAID,
      run: async (args, caller) => {
        const key = args.idempotency_key ?? newIdempotencyKey();
        const { max_cost_microrub: cap, ...call } = apiBody(args);
        await checkCap(api, caller, cap === undefined ? undefined : responsesQuote(args, Number(cap)), key);
        const result = await paidText(api, caller, "create_response", "/v1/responses", call, key);
        if (result.kind === "pending") return result.outcome;
        const { output, ...response } = answerOf(ResponseAnswer, result.body, key);
        const text = output
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
