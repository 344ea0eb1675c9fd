import type { Provider } from "@meter/contracts";
import { UpstreamError } from "../upstream-error";
import type { UpstreamKeys } from "../upstream-keys";
import { createAnthropicProvider } from "./anthropic/client";
import type { ChatProvider } from "./chat-provider";
import { createOpenAIChatProvider } from "./openai-chat/client";
import { createOpenAIResponsesProvider } from "./openai-responses/client";

/** The provider kinds that speak a chat protocol (text, and analysis of images and texts). */
export const CHAT_KINDS = ["anthropic", "openai-chat", "openai-responses"] as const;

/**
 * The chat adapter for a catalog entry's provider block. Cheap to call per request: connection pools are
 * shared per upstream origin, and the API key is looked up at each call. A kind that speaks no chat
 * protocol (an old stored plan's, or an images provider's) fails the call before anything is sent.
 */
export function chatProviderFor(provider: Provider, keys: UpstreamKeys): ChatProvider {
  switch (provider.kind) {
    case "anthropic":
      return createAnthropicProvider(provider, keys);
    case "openai-chat":
      return createOpenAIChatProvider(provider, keys);
    case "openai-responses":
      return createOpenAIResponsesProvider(provider, keys);
    default:
      return { complete: () => Promise.reject(new UpstreamError("not_sent", `provider kind "${String(provider.kind)}" speaks no chat protocol`)) };
  }
}
