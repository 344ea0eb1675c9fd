import type { McpFullResult } from "@meter/contracts";
import type { ToolContent, ToolOutcome, ToolResult } from "../domain/tool-call";
import type { ToolFailure } from "../errors";

/**
 * The text block repeats the structured result as JSON after a one-line summary (MCP asks tools with
 * structured content to do so for older clients); the summary is what a model reads first.
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

/** The JSON-RPC response that will carry `result`, as the era sends it: the thing the size limit is about. */
export type ResponseFrame = (result: ToolResult) => unknown;

export function responseSize(frame: ResponseFrame, result: ToolResult): number {
  return Buffer.byteLength(JSON.stringify(frame(result)), "utf8");
}

/** A field of an oversized result is kept beside the link when its JSON is at most this long. */
const KEPT_FIELD_BYTES = 2048;
/** The longest preview; shortened further when the response would still be over the limit. */
const PREVIEW_CHARS = 8192;

/**
 * What is sent instead of a result over the limit: its small fields (the idempotency key, the status,
 * usage and billing), a link to the whole of it, and the start of its text. Never a failure: the work
 * is done and paid for, and the result is reachable.
 */
export function oversizedResult(original: ToolResult, full: McpFullResult, summary: string, frame: ResponseFrame, limitBytes: number): ToolResult {
  const structured = original.structuredContent;
  const kept = Object.fromEntries(Object.entries(structured).filter(([, v]) => Buffer.byteLength(JSON.stringify(v) ?? "", "utf8") <= KEPT_FIELD_BYTES));
  const source = typeof structured.text === "string" ? structured.text : JSON.stringify(structured);
  const note = `${summary}. The whole result (${full.size_bytes} bytes of JSON) is over the ${limitBytes}-byte limit of one tool result: it is stored at full_result.content_url (download it with the same API key, kept 7 days); preview holds its start`;
  const link: ToolContent = { type: "resource_link", uri: full.content_url, name: "full result (JSON)", mimeType: full.mime_type, size: full.size_bytes };
  const otherLinks = original.content.filter((c) => c.type !== "text");
  let chars = Math.min(source.length, PREVIEW_CHARS);
  for (;;) {
    const fields = { ...kept, full_result: full, preview: source.slice(0, chars) };
    const result: ToolResult = {
      content: [{ type: "text", text: `${note}\n${JSON.stringify(fields)}` }, link, ...otherLinks],
      structuredContent: fields,
      ...(original.isError ? { isError: true } : {}),
    };
    if (chars === 0 || responseSize(frame, result) <= limitBytes) return result;
    chars = Math.floor(chars / 2);
  }
}
