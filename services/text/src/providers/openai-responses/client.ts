import type { Provider } from "@meter/contracts";
import type { TextProvider, UpstreamKeys } from "../provider";
import { remoteProvider, type WireProtocol } from "../shared/remote-provider";
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

export function createOpenAIResponsesProvider(provider: Provider, keys: UpstreamKeys): TextProvider {
  return remoteProvider(openaiResponsesProtocol, provider, keys);
}
