import type { ProviderRequest } from "../provider";

/** The Responses API request body (non-streaming, text only). */
export interface ResponsesBody {
  model: string;
  input: { role: "user" | "assistant"; content: string }[];
  instructions?: string;
  /** OpenAI refuses values below 16 (400, so `rejected`); raising it would break the hold. */
  max_output_tokens: number;
  temperature?: number;
}

export function toResponsesBody(request: ProviderRequest): ResponsesBody {
  return {
    model: request.model,
    input: request.messages.map((m) => ({ role: m.role, content: m.text })),
    ...(request.system ? { instructions: request.system } : {}),
    max_output_tokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
