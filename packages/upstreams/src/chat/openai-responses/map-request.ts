import { dataUrlOf, type ChatRequest } from "../chat-provider";

type ResponsesContent = string | ({ type: "input_image"; image_url: string } | { type: "input_text"; text: string })[];

/** The Responses API request body (non-streaming; text, and images as data URLs before a message's text). */
export interface ResponsesBody {
  model: string;
  input: { role: "user" | "assistant"; content: ResponsesContent }[];
  instructions?: string;
  /** OpenAI refuses values below 16 (400, so `rejected`); raising it would break the hold. */
  max_output_tokens: number;
  temperature?: number;
}

export function toResponsesBody(request: ChatRequest): ResponsesBody {
  return {
    model: request.model,
    input: request.messages.map((m) => ({
      role: m.role,
      content: m.images?.length
        ? [...m.images.map((i) => ({ type: "input_image" as const, image_url: dataUrlOf(i) })), { type: "input_text" as const, text: m.text }]
        : m.text,
    })),
    ...(request.system ? { instructions: request.system } : {}),
    max_output_tokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}
