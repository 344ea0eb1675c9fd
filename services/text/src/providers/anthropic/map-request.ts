import type { ProviderRequest } from "../provider";

/** The Messages API request body (non-streaming, text only). */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: "user" | "assistant"; content: string }[];
  system?: string;
  temperature?: number;
}

export function toAnthropicBody(request: ProviderRequest): AnthropicMessagesBody {
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    messages: request.messages.map((m) => ({ role: m.role, content: m.text })),
    // An empty system prompt says nothing, and some servers refuse an empty text.
    ...(request.system ? { system: request.system } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
