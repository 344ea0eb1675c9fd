import type { TextRecord } from "../domain/text-record";
import { renderRecord } from "./text.render";

const base: TextRecord = {
  id: "0f3c1b8e-8a4b-8c2d-9e1f-123456789abc",
  keyId: "k",
  userId: "u",
  organizationId: "o",
  endpoint: "messages",
  operation: "text",
  idempotencyKey: "i",
  requestId: "req_1",
  fingerprint: "f",
  model: "m",
  plan: {} as TextRecord["plan"],
  estimatedCost: 500,
  holdId: "h",
  allowanceId: null,
  state: "reserving",
  result: null,
  cost: null,
  error: null,
  attempts: 1,
  ownerId: null,
  nextAttemptAt: new Date(Date.now() + 3_000),
  createdAt: new Date("2026-01-01T00:00:00Z"),
};

describe("rendering a text record", () => {
  it("a completed message: the message shape, settled at its cost, the same bytes every time", () => {
    const r: TextRecord = {
      ...base,
      state: "completed",
      cost: 120,
      result: { text: "hi", stop_reason: "end_turn", usage: { input_tokens: 3, output_tokens: 2 } },
    };
    const first = renderRecord(r);
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({
      id: "msg_0f3c1b8e8a4b8c2d9e1f123456789abc",
      type: "message",
      content: [{ type: "text", text: "hi" }],
      billing: { status: "settled", estimated_cost_microrub: 500, cost_microrub: 120 },
    });
    expect(renderRecord(r).body).toBe(first.body);
  });

  it("a completed response: the Responses shape with created_at from the record and total tokens", () => {
    const r: TextRecord = {
      ...base,
      endpoint: "responses",
      state: "completed",
      cost: 7,
      result: { text: "ok", stop_reason: "max_tokens", usage: { input_tokens: 4, output_tokens: 5 } },
    };
    expect(JSON.parse(renderRecord(r).body)).toMatchObject({
      object: "response",
      created_at: 1767225600,
      incomplete_details: { reason: "max_output_tokens" },
      usage: { input_tokens: 4, output_tokens: 5, total_tokens: 9 },
    });
  });

  it("a failed request: its stored error with the request id, released", () => {
    const answer = renderRecord({ ...base, state: "failed", error: { code: "upstream_error", message: "the upstream answered 500; nothing was charged" } });
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toEqual({
      type: "error",
      error: { code: "upstream_error", message: "the upstream answered 500; nothing was charged", type: "api_error", request_id: "req_1" },
    });
  });

  it("an unfinished request: 202 pending with Retry-After, reserved", () => {
    const answer = renderRecord(base);
    expect(answer.status).toBe(202);
    expect(answer.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(answer.body)).toEqual({
      id: "msg_0f3c1b8e8a4b8c2d9e1f123456789abc",
      type: "pending",
      status: "in_progress",
      billing: { status: "reserved", estimated_cost_microrub: 500, cost_microrub: null },
    });
    expect(JSON.parse(renderRecord({ ...base, attempts: 2 }).body).status).toBe("reconciling");
  });
});
