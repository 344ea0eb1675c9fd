import type { Provider } from "@meter/contracts";
import type { UpstreamKeys } from "../../upstream-keys";
import type { ChatProvider } from "../chat-provider";
import { remoteChat, type WireProtocol } from "../remote-chat";
import { toAnthropicBody } from "./map-request";
import { fromAnthropicBody } from "./map-response";

/** The version whose request and answer shapes we speak; newer ones are opt-in per request. */
const ANTHROPIC_VERSION = "2023-06-01";

/** The Messages API: `base_url` is the server root, as the Anthropic SDK's baseURL. */
export const anthropicProtocol: WireProtocol = {
  vendor: "anthropic",
  path: "/v1/messages",
  authHeaders: (apiKey) => ({ "anthropic-version": ANTHROPIC_VERSION, ...(apiKey ? { "x-api-key": apiKey } : {}) }),
  mapRequest: toAnthropicBody,
  mapResponse: fromAnthropicBody,
};

export function createAnthropicProvider(provider: Provider, keys: UpstreamKeys): ChatProvider {
  return remoteChat(anthropicProtocol, provider, keys);
}
