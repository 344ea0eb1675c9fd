import { ErrorCatalog, type BillingObject } from "@meter/contracts";
import { errorBody } from "@meter/service-kit";
import type { TextRecord } from "../domain/text-record";

/**
 * Every answer is rendered from the stored record alone (ids derived from the record id, times from
 * its creation), so the first answer and every replay are the same bytes.
 */
export interface HttpAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

const hex = (id: string) => id.replace(/-/g, "");

function billingOf(r: TextRecord): BillingObject {
  if (r.state === "completed") return { status: "settled", estimated_cost_microrub: r.estimatedCost, cost_microrub: r.cost ?? 0 };
  if (r.state === "failed") return { status: "released", estimated_cost_microrub: r.estimatedCost, cost_microrub: 0 };
  return { status: "reserved", estimated_cost_microrub: r.estimatedCost, cost_microrub: null };
}

export function renderCompleted(r: TextRecord): HttpAnswer {
  const result = r.result!;
  const billing = billingOf(r);
  const body =
    r.endpoint === "messages"
      ? {
          id: `msg_${hex(r.id)}`,
          type: "message",
          role: "assistant",
          model: r.model,
          content: [{ type: "text", text: result.text }],
          stop_reason: result.stop_reason,
          stop_sequence: null,
          usage: { input_tokens: result.usage.input_tokens, output_tokens: result.usage.output_tokens },
          billing,
        }
      : {
          id: `resp_${hex(r.id)}`,
          object: "response",
          created_at: Math.floor(r.createdAt.getTime() / 1000),
          status: "completed",
          model: r.model,
          output: [
            {
              type: "message",
              id: `msg_${hex(r.id)}`,
              role: "assistant",
              status: "completed",
              content: [{ type: "output_text", text: result.text, annotations: [] }],
            },
          ],
          incomplete_details: result.stop_reason === "max_tokens" ? { reason: "max_output_tokens" } : null,
          usage: {
            input_tokens: result.usage.input_tokens,
            output_tokens: result.usage.output_tokens,
            total_tokens: result.usage.input_tokens + result.usage.output_tokens,
          },
          billing,
        };
  return { status: 200, body: JSON.stringify(body), headers: {} };
}

/** 202: the outcome is not final yet; the client retries with the same key and body. */
export function renderPending(r: TextRecord): HttpAnswer {
  const waitingForUpstream = r.state === "reserving";
  const body = {
    id: `${r.endpoint === "messages" ? "msg" : "resp"}_${hex(r.id)}`,
    type: "pending",
    status: waitingForUpstream && r.attempts <= 1 ? "in_progress" : "reconciling",
    billing: billingOf(r),
  };
  const retryAfter = Math.max(1, Math.ceil((r.nextAttemptAt.getTime() - Date.now()) / 1000));
  return { status: 202, body: JSON.stringify(body), headers: { "retry-after": String(Math.min(retryAfter, 60)) } };
}

/** The stored error, with the id of the request that produced it: the same bytes on every replay. */
export function renderFailed(r: TextRecord): HttpAnswer {
  const { code, message } = r.error!;
  const status = ErrorCatalog[code];
  return { status, body: JSON.stringify(errorBody(code, message, status, r.requestId ?? undefined)), headers: {} };
}

export function renderRecord(r: TextRecord): HttpAnswer {
  if (r.state === "completed") return renderCompleted(r);
  if (r.state === "failed") return renderFailed(r);
  return renderPending(r);
}
