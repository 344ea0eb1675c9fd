import { ToolFailures } from "../errors";
import { failureResult, fitResult, resultSize, successResult } from "./tool-result";

const LIMIT = 512 * 1024;

/** A successful result whose serialized size is `bytes` or one byte less (the padding appears twice). */
function resultOfSize(bytes: number) {
  const make = (pad: string) => successResult({ structured: { idempotency_key: "k-1", status: "completed", text: pad }, summary: "create_message completed" });
  const overhead = resultSize(make(""));
  return make("x".repeat(Math.floor((bytes - overhead) / 2)));
}

describe("tool results", () => {
  it("a success carries the summary and the JSON in text, and the structured result", () => {
    const r = successResult({ structured: { a: 1 }, summary: "done" });
    expect(r.isError).toBeUndefined();
    expect(r.content[0]).toEqual({ type: "text", text: 'done\n{"a":1}' });
    expect(r.structuredContent).toEqual({ a: 1 });
  });

  it("a failure puts the code in the text and in structuredContent.error", () => {
    const r = failureResult(ToolFailures.busy("organization", 2).with({ idempotency_key: "k" }));
    expect(r.isError).toBe(true);
    expect(r.content[0]!.type === "text" && r.content[0]!.text.startsWith("mcp_busy: ")).toBe(true);
    expect(r.structuredContent).toMatchObject({ idempotency_key: "k", error: { code: "mcp_busy", details: { limit: "organization", max_active_calls: 2 } } });
  });

  it("keeps a result at the limit and refuses one a byte over it", () => {
    const result = resultOfSize(LIMIT);
    const size = resultSize(result);
    expect(size).toBeGreaterThanOrEqual(LIMIT - 1);
    expect(fitResult(result, size, "s")).toBe(result);
    const over = fitResult(result, size - 1, "create_message completed");
    expect(over.isError).toBe(true);
    expect(over.structuredContent).toMatchObject({
      idempotency_key: "k-1",
      status: "completed",
      error: { code: "result_too_large", details: { size_bytes: size, limit_bytes: size - 1 } },
    });
    expect(resultSize(over)).toBeLessThan(2048);
  });

  it("with the default limit, 512 KiB passes and 512 KiB + 2 bytes does not", () => {
    expect(fitResult(resultOfSize(LIMIT), LIMIT, "s").isError).toBeUndefined();
    expect(fitResult(resultOfSize(LIMIT + 2), LIMIT, "s").isError).toBe(true);
  });
});
