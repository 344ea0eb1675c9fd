import {
  generateInternalKeySet,
  InternalAuth,
  parseGrantKeys,
  parseInternalKeys,
  type GrantKeys,
  type InternalKeys,
  type InternalKeySet,
} from "@meter/service-kit";
import type { Deployable, Identity } from "@meter/contracts";

/**
 * One key set per test process: every deployable's signing key and the shared public list, as the
 * local runner gives them. Services under test and the tests' own signed calls use the same set.
 */
let keySet: InternalKeySet | undefined;

function keys(): InternalKeySet {
  keySet ??= generateInternalKeySet();
  return keySet;
}

/** Every deployable's signing key and the public list, for a system of processes (startSystem). */
export function testKeySet(): InternalKeySet {
  return keys();
}

/** The settings a process of `self` would be started with (billing-ledger's with its grant key too). */
export function testKeyEnv(self: Deployable): { INTERNAL_SIGNING_KEY: string; INTERNAL_PUBLIC_KEYS: string } & Record<string, string> {
  const env = { INTERNAL_SIGNING_KEY: keys().signingKeys[self], INTERNAL_PUBLIC_KEYS: keys().publicKeys };
  return self === "billing-ledger" ? { ...env, GRANT_SIGNING_KEY: keys().grantSigningKey, GRANT_PUBLIC_KEYS: keys().grantPublicKeys } : env;
}

/** billing-ledger's grant keys in a test process (what it signs placements and grants with). */
export function testGrantKeys(): GrantKeys {
  return parseGrantKeys(keys().grantSigningKey, keys().grantPublicKeys);
}

/** The signer and verifier of a process of `self`. */
export function testAuth(self: Deployable): InternalAuth {
  const env = testKeyEnv(self);
  return new InternalAuth(parseInternalKeys(self, env.INTERNAL_SIGNING_KEY, env.INTERNAL_PUBLIC_KEYS));
}

/** The keys of a process of `self`: what a test's own bus signs its messages with (connectBus's `keys`). */
export function testKeys(self: Deployable): InternalKeys {
  return testAuth(self).keys;
}

/**
 * The headers and body of a call signed as `signer` for `audience`, the one way tests speak to a
 * service's door directly. JSON bodies are serialised here, so the signed digest is of what is sent.
 */
export function signedCall(
  signer: Deployable,
  audience: Deployable,
  identity: Identity,
  method: string,
  path: string,
  body?: unknown,
): { headers: Record<string, string>; payload: string | undefined } {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const headers = testAuth(signer).sign(identity, { audience, method, path, body: payload });
  if (payload !== undefined) headers["content-type"] = "application/json";
  return { headers, payload };
}
