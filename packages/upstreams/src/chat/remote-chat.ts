import type { Provider } from "@meter/contracts";
import { postUpstream } from "../http/upstream-http";
import { UpstreamError } from "../upstream-error";
import { apiKeyOf, type UpstreamKeys } from "../upstream-keys";
import type { ChatProvider, ChatRequest, ChatResult } from "./chat-provider";

/** What differs between the chat wire protocols; the transport and the failure rules are shared. */
export interface WireProtocol {
  vendor: Provider["kind"];
  /** Appended to the catalog's base_url (its trailing slashes removed). */
  path: string;
  /** Authentication headers for a key; no key (no api_key_env in the catalog) sends none. */
  authHeaders(apiKey: string | undefined): Record<string, string>;
  mapRequest(request: ChatRequest): unknown;
  /** Throws UpstreamError when the 2xx body is not an answer it can read. */
  mapResponse(body: unknown, status: number): ChatResult;
}

/** The URL of a protocol's endpoint under a catalog entry's base_url; `not_sent` when the entry has none. */
export function endpointOf(vendor: string, provider: Provider, path: string): string {
  if (!provider.base_url) throw new UpstreamError("not_sent", `${vendor}: the catalog entry has no base_url`);
  return provider.base_url.replace(/\/+$/, "") + path;
}

/** Anything but an UpstreamError, thrown after the request may have gone out: taken as sent. */
export function asUpstreamError(vendor: string, e: unknown): UpstreamError {
  if (e instanceof UpstreamError) return e;
  return new UpstreamError("unknown", `${vendor}: ${e instanceof Error ? e.message : String(e)}`, undefined, { cause: e });
}

/** A ChatProvider for an upstream reached over HTTP. */
export function remoteChat(protocol: WireProtocol, provider: Provider, keys: UpstreamKeys): ChatProvider {
  return {
    async complete(request, options) {
      try {
        const apiKey = apiKeyOf(protocol.vendor, provider, keys);
        const { status, body } = await postUpstream({
          vendor: protocol.vendor,
          url: endpointOf(protocol.vendor, provider, protocol.path),
          headers: protocol.authHeaders(apiKey),
          body: { json: protocol.mapRequest(request) },
          timeoutMs: options.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
          secrets: apiKey ? [apiKey] : [],
        });
        return protocol.mapResponse(body, status);
      } catch (e) {
        throw asUpstreamError(protocol.vendor, e);
      }
    },
  };
}
