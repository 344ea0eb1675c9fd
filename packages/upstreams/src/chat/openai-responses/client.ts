import type { Provider } from "@meter/contracts";
import type { UpstreamKeys } from "../../upstream-keys";
import type { ChatProvider } from "../chat-provider";
import { remoteChat, type WireProtocol } from "../remote-chat";
import { toResponsesBody } from "./map-request";
import { fromResponsesBody } from "./map-response";

/** The Responses API: `base_url` ends in /v1, as the OpenAI SDK's baseURL. */
export const openaiResponsesProtocol: WireProtocol = {
  vendor: "openai-responses",
  path: "/responses",
  authHeaders: (apiKey): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
  mapRequest: toResponsesBody,
  mapResponse: fromResponsesBody,
};

export function createOpenAIResponsesProvider(provider: Provider, keys: UpstreamKeys): ChatProvider {
  return remoteChat(openaiResponsesProtocol, provider, keys);
}
