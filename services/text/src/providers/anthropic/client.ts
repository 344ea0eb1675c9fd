import type { Provider } from "@meter/contracts";
import type { TextProvider, UpstreamKeys } from "../provider";
import { remoteProvider, type WireProtocol } from "../shared/remote-provider";
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

export function createAnthropicProvider(provider: Provider, keys: UpstreamKeys): TextProvider {
  return remoteProvider(anthropicProtocol, provider, keys);
}
