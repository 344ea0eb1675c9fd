import { randomUUID } from "node:crypto";
import { FAKE_MODEL, LOCAL_MODEL, startTextStack, type TextStack } from "./support/text-stack";

let s: TextStack;
beforeAll(async () => {
  s = await startTextStack();
});
afterEach(() => s.fake.reset());
afterAll(async () => {
  try {
    await s.assertBooksBalance();
  } finally {
    await s.close();
  }
});

const body = (text: string, model = LOCAL_MODEL) => ({ model, max_tokens: 40, messages: [{ role: "user", content: text }] });

describe("idempotency", () => {
  it("replays a finished request byte for byte, with Idempotent-Replayed, charging once", async () => {
    const a = await s.account();
    const headers = { "idempotency-key": randomUUID() };
    const first = await s.call(a.key, "/v1/messages", body("once"), headers);
    const balanceAfterFirst = await s.settledBalance(a.organizationId);
    // Same JSON, other formatting: still the same request.
    const replay = await s.call(a.key, "/v1/messages", JSON.stringify(body("once"), null, 2), headers);
    expect(first.status).toBe(200);
    expect(replay.status).toBe(200);
    expect(replay.text).toBe(first.text);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await s.settledBalance(a.organizationId)).toEqual(balanceAfterFirst);
  });

  it("refuses the same key with another body (422) and keeps the first answer", async () => {
    const a = await s.account();
    const headers = { "idempotency-key": randomUUID() };
    const first = await s.call(a.key, "/v1/messages", body("first"), headers);
    const other = await s.call(a.key, "/v1/messages", body("second"), headers);
    expect(other.status).toBe(422);
    expect((other.json.error as { code: string }).code).toBe("idempotency_key_mismatch");
    expect((await s.call(a.key, "/v1/messages", body("first"), headers)).text).toBe(first.text);
  });

  it("keys are scoped to the API key and the endpoint", async () => {
    const a = await s.account();
    const b = await s.account();
    const headers = { "idempotency-key": "shared-key-1" };
    expect((await s.call(a.key, "/v1/messages", body("a"), headers)).status).toBe(200);
    expect((await s.call(b.key, "/v1/messages", body("b"), headers)).status).toBe(200);
    expect((await s.call(a.key, "/v1/responses", { model: LOCAL_MODEL, input: "a" }, headers)).status).toBe(200);
  });

  it("runs concurrent duplicates once: one upstream call, one hold, one charge", async () => {
    const a = await s.account();
    s.fake.configure({ delayMs: 300 });
    const headers = { "idempotency-key": randomUUID() };
    const calls = s.fake.callCount();
    const results = await Promise.all(Array.from({ length: 8 }, () => s.call(a.key, "/v1/messages", body("dup", FAKE_MODEL), headers)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.text)).size).toBe(1);
    expect(s.fake.callCount() - calls).toBe(1);
    await s.settledBalance(a.organizationId);
    const ledger = await s.admin("GET", `/admin/v1/organizations/${a.organizationId}/ledger`);
    // The key's first request also asked for an allowance: its own hold and return are not the request's.
    const allowances = new Set(
      (await s.text.database.pool.query<{ id: string }>("SELECT id FROM allowances WHERE key_id = $1", [a.keyId])).rows.map((r) => r.id),
    );
    const kinds = (ledger.body.data as { kind: string; hold_id: string | null }[])
      .filter((e) => e.hold_id === null || !allowances.has(e.hold_id))
      .map((e) => e.kind)
      .sort();
    expect(kinds).toEqual(["credit", "hold", "settle"]);
  });
});
