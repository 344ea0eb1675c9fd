import type { Provider } from "@meter/contracts";
import type { UpstreamKeys } from "../../upstream-keys";
import type { ChatProvider } from "../chat-provider";
import { remoteChat, type WireProtocol } from "../remote-chat";
import { toChatCompletionsBody } from "./map-request";
import { fromChatCompletionsBody } from "./map-response";

/** Chat Completions (OpenAI, vLLM, llama.cpp server, Ollama, OpenRouter...): `base_url` ends in /v1. */
export const openaiChatProtocol: WireProtocol = {
  vendor: "openai-chat",
  path: "/chat/completions",
  authHeaders: (apiKey): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
  mapRequest: toChatCompletionsBody,
  mapResponse: fromChatCompletionsBody,
};

export function createOpenAIChatProvider(provider: Provider, keys: UpstreamKeys): ChatProvider {
  return remoteChat(openaiChatProtocol, provider, keys);
}
