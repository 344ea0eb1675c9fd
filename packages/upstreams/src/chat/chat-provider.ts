/** An image given to a chat model, as its bytes in base64. */
export interface ChatImage {
  /** image/png, image/jpeg, image/webp or image/gif: what every chat protocol takes. */
  mediaType: string;
  data: string;
}

/**
 * What every chat adapter receives: the request reduced to what all the wire protocols can say. A
 * message's images go before its text (the order the vendors recommend). `maxTokens` is always set,
 * because the hold was computed from it and the upstream must not exceed it.
 */
export interface ChatRequest {
  /** The model name sent upstream (catalog `upstream_model`, else the public id). */
  model: string;
  system?: string;
  messages: { role: "user" | "assistant"; text: string; images?: ChatImage[] }[];
  maxTokens: number;
  temperature?: number;
}

export interface ChatUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface ChatResult {
  text: string;
  stopReason: "end_turn" | "max_tokens";
  /** What the upstream reported; undefined when it reported nothing usable (missing, negative, not integers). */
  usage?: ChatUsage;
  /** The upstream's own id for the call, for logs. */
  upstreamId?: string;
}

export interface ChatProvider {
  complete(request: ChatRequest, options: { signal?: AbortSignal; timeoutMs: number }): Promise<ChatResult>;
}

/** An image as the OpenAI protocols take it inline: a `data:` URL. */
export function dataUrlOf(image: ChatImage): string {
  return `data:${image.mediaType};base64,${image.data}`;
}
