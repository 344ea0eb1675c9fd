import type { ChatRequest, ChatResult } from "@meter/upstreams";

/**
 * The built-in model, for demos and tests: no network, no randomness, the same answer to the same request.
 *
 * - Answer: `Echo: ` followed by the text of the last user message, verbatim (`Echo: ` alone if there is none).
 * - Tokens: ceil(UTF-8 bytes / 4). Input counts the system text and every message text together;
 *   output counts the answer. Usage is always reported.
 * - Limit: an answer over `maxTokens` tokens is cut to the longest prefix (whole characters) that fits,
 *   and then stops with `max_tokens`; otherwise `end_turn`.
 * - Slowness on demand: `[[sleep:<ms>]]` in the last user message makes it wait that long before
 *   answering (at most 120000 ms; the first marker counts). Only the last user message is read, so a
 *   conversation that once asked for a pause does not pause again on every later turn.
 */
export const LOCAL_SLEEP_CAP_MS = 120_000;

const SLEEP_MARKER = /\[\[sleep:(\d+)\]\]/;
const BYTES_PER_TOKEN = 4;

export function localTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / BYTES_PER_TOKEN);
}

function lastUserText(request: ChatRequest): string | undefined {
  return request.messages.findLast((m) => m.role === "user")?.text;
}

/** How long the request asks the model to wait before answering, in ms (0 without a marker). */
export function localSleepMs(request: ChatRequest): number {
  const match = SLEEP_MARKER.exec(lastUserText(request) ?? "");
  return match ? Math.min(Number(match[1]), LOCAL_SLEEP_CAP_MS) : 0;
}

export function localAnswer(request: ChatRequest): ChatResult {
  const full = `Echo: ${lastUserText(request) ?? ""}`;
  const text = truncateToTokens(full, request.maxTokens);
  const input = [request.system ?? "", ...request.messages.map((m) => m.text)].join("");
  return {
    text,
    stopReason: text.length < full.length ? "max_tokens" : "end_turn",
    usage: { input_tokens: localTokens(input), output_tokens: localTokens(text) },
  };
}

/** The longest prefix of whole code points whose token count is at most `maxTokens`. */
function truncateToTokens(text: string, maxTokens: number): string {
  const budget = Math.max(0, maxTokens) * BYTES_PER_TOKEN;
  if (Buffer.byteLength(text, "utf8") <= budget) return text;
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch, "utf8");
    if (bytes + size > budget) break;
    bytes += size;
    end += ch.length;
  }
  return text.slice(0, end);
}
