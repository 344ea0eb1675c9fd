import type { Provider } from "@meter/contracts";
import { chatProviderFor, type ChatProvider, type UpstreamKeys } from "@meter/upstreams";
import { createLocalProvider } from "./local/client";

const local = createLocalProvider();

/**
 * The adapter for a catalog entry's `provider` block: the built-in model, or an upstream's chat
 * protocol (@meter/upstreams; a kind that speaks none fails the call before anything is sent).
 */
export function createProvider(provider: Provider, keys: UpstreamKeys): ChatProvider {
  return provider.kind === "local" ? local : chatProviderFor(provider, keys);
}
