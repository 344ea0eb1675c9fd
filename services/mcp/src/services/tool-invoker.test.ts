import { createLogger } from "@meter/service-kit";
import type { ResultStore, ResultToStore } from "../domain/stored-result";
import type { ToolResult } from "../domain/tool-call";
import { CallLimiter } from "./call-limiter";
import { ToolCatalog } from "./tool-catalog";
import { ToolInvoker } from "./tool-invoker.service";
import { responseSize } from "./tool-result";
import { FakePublicApi, ok, testCaller } from "../../test/support/public-api.fake";

const LIMIT = 512 * 1024;
const frame = (result: ToolResult) => ({ jsonrpc: "2.0", id: 1, result });

class MemoryResults implements ResultStore {
  readonly saved = new Map<string, ResultToStore>();
  async save(r: ResultToStore): Promise<string> {
    const id = `00000000-0000-4000-8000-${String(this.saved.size + 1).padStart(12, "0")}`;
    this.saved.set(id, r);
    return id;
  }
  async find(id: string): Promise<string | undefined> {
    return this.saved.get(id)?.content;
  }
}

function setup(answerText: string, caller = testCaller()) {
  const api = new FakePublicApi().on(
    "POST",
    "/v1/messages",
    ok({
      id: "msg_1",
      type: "message",
      content: [{ type: "text", text: answerText }],
      stop_reason: "end_turn",
      billing: { status: "settled", cost_microrub: 7 },
    }),
  );
  const catalog = new ToolCatalog({ api, jobWait: { maxWaitMs: 0, firstPollMs: 1, maxPollMs: 1 }, inlineResultBytes: 1024 });
  const leases = { tryAcquire: async () => true, renew: async () => true, release: async () => undefined };
  const limiter = new CallLimiter(leases, { processId: "p", perProcess: 4, perOrganization: 2, leaseTtlMs: 30_000 }, createLogger("test", "silent"));
  const results = new MemoryResults();
  const invoker = new ToolInvoker({ limiter, results, resultLimitBytes: LIMIT, logger: createLogger("test", "silent") });
  const call = (args: Record<string, unknown>) => invoker.invoke(catalog.get("create_message")!, args, caller, frame);
  return { api, results, call };
}

const ARGS = { model: "m", max_tokens: 100_000, messages: [{ role: "user", content: "write a lot" }], idempotency_key: "k-big" };

describe("the size of a tool result", () => {
  it("is the JSON-RPC response as sent: a 140,000-character answer (about 274 KiB of response) is delivered whole", async () => {
    const text = "x".repeat(140_000);
    const { call, results } = setup(text);
    const r = await call(ARGS);
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toMatchObject({ status: "completed", text, message: { id: "msg_1", billing: { cost_microrub: 7 } } });
    expect(responseSize(frame, r)).toBeLessThan(LIMIT);
    expect(results.saved.size).toBe(0);
  });

  it("a result over the limit is stored for the key, linked, and previewed: not an error, the paid answer reachable", async () => {
    const text = "y".repeat(300_000);
    const { call, results } = setup(text);
    const r = await call(ARGS);
    expect(r.isError).toBeUndefined();
    expect(responseSize(frame, r)).toBeLessThanOrEqual(LIMIT);
    const out = r.structuredContent as { idempotency_key: string; status: string; preview: string; full_result: { result_id: string; content_url: string } };
    expect(out).toMatchObject({ idempotency_key: "k-big", status: "completed", message: { billing: { cost_microrub: 7 } } });
    expect(out.preview).toBe(text.slice(0, out.preview.length));
    expect(out.preview.length).toBeGreaterThan(1000);
    expect(out.full_result.content_url).toBe(`https://api.example.test/v1/mcp/results/${out.full_result.result_id}`);
    expect(r.content).toContainEqual(expect.objectContaining({ type: "resource_link", uri: out.full_result.content_url, mimeType: "application/json" }));
    expect((r.content[0] as { text: string }).text).toMatch(/over the 524288-byte limit of one tool result: it is stored at full_result.content_url/);

    const stored = results.saved.get(out.full_result.result_id)!;
    expect(stored).toMatchObject({ tool: "create_message", idempotencyKey: "k-big", owner: { keyId: testCaller().identity.key_id } });
    expect(JSON.parse(stored.content)).toMatchObject({ status: "completed", text });
  });
});
