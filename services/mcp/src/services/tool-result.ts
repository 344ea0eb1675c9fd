import type { ToolOutcome, ToolResult } from "../domain/tool-call";
import { ToolFailures, type ToolFailure } from "../errors";

/**
 * The text block repeats the structured result as JSON after a one-line summary: clients that show
 * only text still get everything, and the summary is what a model reads first.
 */
export function successResult(outcome: ToolOutcome): ToolResult {
  return {
    content: [{ type: "text", text: `${outcome.summary}\n${JSON.stringify(outcome.structured)}` }, ...(outcome.links ?? [])],
    structuredContent: outcome.structured,
  };
}

export function failureResult(failure: ToolFailure): ToolResult {
  const structured = { ...failure.context, error: failure.error };
  return {
    content: [{ type: "text", text: `${failure.error.code}: ${failure.error.message}\n${JSON.stringify(structured)}` }],
    structuredContent: structured,
    isError: true,
  };
}

export function resultSize(result: ToolResult): number {
  return Buffer.byteLength(JSON.stringify(result), "utf8");
}

/** What survives of a result too large to send: what the caller needs to know it was charged and to retry. */
const KEPT_WHEN_TOO_LARGE = ["idempotency_key", "status"] as const;

/**
 * A result over `limitBytes` becomes a `result_too_large` failure that keeps the summary and the
 * paid call's idempotency key: clients cut results far below the limit, so nothing is sent in part.
 */
export function fitResult(result: ToolResult, limitBytes: number, summary: string): ToolResult {
  const size = resultSize(result);
  if (size <= limitBytes) return result;
  const kept = Object.fromEntries(KEPT_WHEN_TOO_LARGE.filter((k) => result.structuredContent[k] !== undefined).map((k) => [k, result.structuredContent[k]]));
  return failureResult(ToolFailures.resultTooLarge(size, limitBytes, summary).with(kept));
}
