/**
 * The human message in an upstream's error body, whichever server wrote it:
 * Anthropic `{type: "error", error: {type, message}}`, OpenAI and llama.cpp `{error: {message, type, code}}`,
 * Ollama `{error: "..."}`, vLLM `{object: "error", message, type}`, FastAPI-style `{detail: ...}`.
 * A body that is not JSON is used only when it is a short line of text (not an HTML error page).
 */
export function upstreamErrorMessage(body: string | undefined): string | undefined {
  if (!body) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    const line = body.trim();
    return line.length > 0 && line.length <= 200 && !line.startsWith("<") ? line : undefined;
  }
  if (!isRecord(parsed)) return undefined;
  const error = parsed.error;
  if (typeof error === "string") return error;
  if (isRecord(error) && typeof error.message === "string") {
    const type = typeof error.type === "string" ? error.type : typeof error.code === "string" ? error.code : undefined;
    return type ? `${type}: ${error.message}` : error.message;
  }
  if (typeof parsed.message === "string") return parsed.message;
  if (parsed.detail !== undefined) return typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail).slice(0, 300);
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
