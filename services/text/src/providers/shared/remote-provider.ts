import type { Provider } from "@meter/contracts";
import { UpstreamError, type ProviderRequest, type ProviderResult, type TextProvider, type UpstreamKeys } from "../provider";
import { postUpstreamJson } from "./upstream-http";

/** What differs between the wire protocols; the transport and the failure rules are shared. */
export interface WireProtocol {
  vendor: Provider["kind"];
  /** Appended to the catalog's base_url (its trailing slashes removed). */
  path: string;
  /** Authentication headers for a key; no key (no api_key_env in the catalog) sends none. */
  authHeaders(apiKey: string | undefined): Record<string, string>;
  mapRequest(request: ProviderRequest): unknown;
  /** Throws UpstreamError when the 2xx body is not an answer it can read. */
  mapResponse(body: unknown, status: number): ProviderResult;
}

/** A TextProvider for an upstream reached over HTTP. */
export function remoteProvider(protocol: WireProtocol, provider: Provider, keys: UpstreamKeys): TextProvider {
  return {
    async complete(request, options) {
      try {
        const baseUrl = provider.base_url;
        if (!baseUrl) throw new UpstreamError("not_sent", `${protocol.vendor}: the catalog entry has no base_url`);
        const apiKey = readApiKey(protocol.vendor, provider, keys);
        const { status, body } = await postUpstreamJson({
          vendor: protocol.vendor,
          url: baseUrl.replace(/\/+$/, "") + protocol.path,
          headers: protocol.authHeaders(apiKey),
          body: protocol.mapRequest(request),
          timeoutMs: options.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
          secrets: apiKey ? [apiKey] : [],
        });
        return protocol.mapResponse(body, status);
      } catch (e) {
        if (e instanceof UpstreamError) throw e;
        // Whatever this is, it happened after the request may have gone out: assume it did.
        throw new UpstreamError("unknown", `${protocol.vendor}: ${e instanceof Error ? e.message : String(e)}`, undefined, { cause: e });
      }
    },
  };
}

function readApiKey(vendor: string, provider: Provider, keys: UpstreamKeys): string | undefined {
  if (!provider.api_key_env) return undefined;
  const key = keys.get(provider.api_key_env);
  if (!key) {
    throw new UpstreamError("not_sent", `${vendor}: the upstream API key ${provider.api_key_env} is not configured`);
  }
  return key;
}
