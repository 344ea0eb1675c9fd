import { upstreamKeyEnvRefusal, type Provider } from "@meter/contracts";
import { UpstreamError } from "./upstream-error";

/**
 * The upstream API keys this process may send, by the variable name a catalog entry gives
 * (`api_key_env`). Read once from the environment at start, and only names the upstream-key rule
 * allows: a catalog entry cannot make a service send its internal key or a database URL to an
 * upstream of the admin's choosing.
 */
export interface UpstreamKeys {
  get(name: string): string | undefined;
}

/** The key a provider's calls carry; undefined when its entry names none. Throws `not_sent` when it names one this process lacks. */
export function apiKeyOf(vendor: string, provider: Provider, keys: UpstreamKeys): string | undefined {
  if (!provider.api_key_env) return undefined;
  const key = keys.get(provider.api_key_env);
  if (!key) throw new UpstreamError("not_sent", `${vendor}: the upstream API key ${provider.api_key_env} is not configured`);
  return key;
}

/** Whether this process can call the provider: it needs no key, or has the one it names. */
export function hasKeyFor(provider: Provider, keys: UpstreamKeys): boolean {
  return !provider.api_key_env || keys.get(provider.api_key_env) !== undefined;
}

/**
 * The upstream keys of a process, read once from its environment: the variables whose names the
 * upstream-key rule allows (`pattern`, UPSTREAM_KEY_ENV_PATTERN, and never one of this system's own
 * settings: upstreamKeyEnvRefusal, the rule billing's catalog applies to `api_key_env`) and that are none
 * of `ownSettings` (the reading service's own variables).
 */
export function upstreamKeysFrom(source: NodeJS.ProcessEnv, pattern: string, ownSettings: readonly string[]): UpstreamKeys {
  let allowed: RegExp;
  try {
    allowed = new RegExp(pattern);
  } catch (e) {
    throw new Error(`UPSTREAM_KEY_ENV_PATTERN is not a regular expression: ${(e as Error).message}`);
  }
  const own = new Set(ownSettings);
  const keys = new Map(
    Object.entries(source).filter(
      (entry): entry is [string, string] =>
        typeof entry[1] === "string" && entry[1] !== "" && !own.has(entry[0]) && upstreamKeyEnvRefusal(entry[0], allowed) === undefined,
    ),
  );
  return { get: (name) => keys.get(name) };
}
