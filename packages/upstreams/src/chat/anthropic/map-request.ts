import type { ChatRequest } from "../chat-provider";

type AnthropicContent = string | ({ type: "image"; source: { type: "base64"; media_type: string; data: string } } | { type: "text"; text: string })[];

/** The Messages API request body (non-streaming; text, and base64 image blocks before a message's text). */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: "user" | "assistant"; content: AnthropicContent }[];
  system?: string;
  temperature?: number;
}

export function toAnthropicBody(request: ChatRequest): AnthropicMessagesBody {
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    messages: request.messages.map((m) => ({
      role: m.role,
      content: m.images?.length
        ? [
            ...m.images.map((i) => ({ type: "image" as const, source: { type: "base64" as const, media_type: i.mediaType, data: i.data } })),
            { type: "text" as const, text: m.text },
          ]
        : m.text,
    })),
    // An empty system prompt says nothing, and some servers refuse an empty text.
    ...(request.system ? { system: request.system } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
