import type { ProviderRequest } from "../provider";

/** The Chat Completions request body (non-streaming, text only). */
export interface ChatCompletionsBody {
  model: string;
  messages: { role: "system" | "user" | "assistant"; content: string }[];
  /**
   * `max_tokens`, not `max_completion_tokens`: vLLM, llama.cpp server, Ollama and OpenRouter all honour
   * it. OpenAI's reasoning models refuse it (400); serve those through `openai-responses`.
   */
  max_tokens: number;
  temperature?: number;
}

export function toChatCompletionsBody(request: ProviderRequest): ChatCompletionsBody {
  return {
    model: request.model,
    messages: [
      ...(request.system ? [{ role: "system" as const, content: request.system }] : []),
      ...request.messages.map((m) => ({ role: m.role, content: m.text })),
    ],
    max_tokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
