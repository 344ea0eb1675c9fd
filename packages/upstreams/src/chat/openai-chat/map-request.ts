import { dataUrlOf, type ChatRequest } from "../chat-provider";

type ChatContent = string | ({ type: "image_url"; image_url: { url: string } } | { type: "text"; text: string })[];

/** The Chat Completions request body (non-streaming; text, and images as data URLs before a message's text). */
export interface ChatCompletionsBody {
  model: string;
  messages: { role: "system" | "user" | "assistant"; content: ChatContent }[];
  /**
   * `max_tokens`, not `max_completion_tokens`: vLLM, llama.cpp server, Ollama and OpenRouter all honour
   * it. OpenAI's reasoning models refuse it (400); serve those through `openai-responses`.
   */
  max_tokens: number;
  temperature?: number;
}

export function toChatCompletionsBody(request: ChatRequest): ChatCompletionsBody {
  return {
    model: request.model,
    messages: [
      ...(request.system ? [{ role: "system" as const, content: request.system }] : []),
      ...request.messages.map((m) => ({
        role: m.role,
        content: m.images?.length
          ? [...m.images.map((i) => ({ type: "image_url" as const, image_url: { url: dataUrlOf(i) } })), { type: "text" as const, text: m.text }]
          : m.text,
      })),
    ],
    max_tokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
