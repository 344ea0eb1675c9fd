import type { Provider } from "@meter/contracts";

/**
 * What every upstream adapter receives: the request reduced to what all four wire protocols can say.
 * `maxTokens` is always set, because the hold was computed from it and the upstream must not exceed it.
 */
export interface ProviderRequest {
  /** The model name sent upstream (catalog `upstream_model`, else the public id). */
  model: string;
  system?: string;
  messages: { role: "user" | "assistant"; text: string }[];
  maxTokens: number;
  temperature?: number;
}

export interface ProviderUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface ProviderResult {
  text: string;
  stopReason: "end_turn" | "max_tokens";
  /** What the upstream reported; undefined when it reported nothing usable (missing, negative, not integers). */
  usage?: ProviderUsage;
  /** The upstream's own id for the call, for logs. */
  upstreamId?: string;
}

/**
 * How an upstream call failed, which decides what happens to the money:
 * - `not_sent`: the request never reached the upstream (connection refused, DNS): nothing ran.
 * - `rejected`: the upstream answered 4xx: it refused the request, nothing ran.
 * - `failed`: the upstream answered 5xx (or 429 overload): it did not complete the call; worth retrying.
 * - `unknown`: the request was sent and no answer came (timeout, connection dropped, unreadable body):
 *   the upstream may have run it and charged us.
 */
export type UpstreamFailureKind = "not_sent" | "rejected" | "failed" | "unknown";

export class UpstreamError extends Error {
  /** How long the upstream asked us to wait (its Retry-After), when it said. */
  readonly retryAfterMs?: number;

  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    this.name = "UpstreamError";
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

export interface TextProvider {
  complete(request: ProviderRequest, options: { signal?: AbortSignal; timeoutMs: number }): Promise<ProviderResult>;
}

/**
 * The upstream API keys this process may send, by the variable name a catalog entry gives
 * (`api_key_env`). Read once from the environment at start (config.ts), and only names that match
 * the key pattern and are none of the service's own settings: a catalog entry cannot make the
 * service send its internal key or a database URL to an upstream of the admin's choosing.
 */
export interface UpstreamKeys {
  get(name: string): string | undefined;
}

/** Builds the adapter for a catalog entry's provider block. */
export type ProviderFactory = (provider: Provider, keys: UpstreamKeys) => TextProvider;
