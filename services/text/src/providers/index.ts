import { UpstreamError, type ProviderFactory, type TextProvider } from "./provider";
import { createAnthropicProvider } from "./anthropic/client";
import { createLocalProvider } from "./local/client";
import { createOpenAIChatProvider } from "./openai-chat/client";
import { createOpenAIResponsesProvider } from "./openai-responses/client";

export { closeUpstreamAgents } from "./shared/upstream-http";

const local = createLocalProvider();

/**
 * The adapter for a catalog entry's `provider` block. Cheap to call per request: connection pools are
 * shared per upstream origin, and the API key is looked up at each call.
 */
export const createProvider: ProviderFactory = (provider, keys): TextProvider => {
  switch (provider.kind) {
    case "anthropic":
      return createAnthropicProvider(provider, keys);
    case "openai-chat":
      return createOpenAIChatProvider(provider, keys);
    case "openai-responses":
      return createOpenAIResponsesProvider(provider, keys);
    case "local":
      return local;
    default: {
      // A stored plan may name a kind this build no longer has: fail the call, before sending anything.
      const unknownKind: never = provider.kind;
      return {
        complete: () => Promise.reject(new UpstreamError("not_sent", `no adapter for provider kind "${String(unknownKind)}"`)),
      };
    }
  }
};
