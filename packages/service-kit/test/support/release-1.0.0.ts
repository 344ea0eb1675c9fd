import { randomBytes, sign, verify } from "node:crypto";
import { InternalHeaders, UNSIGNED_PAYLOAD } from "@meter/contracts";
import { sha256Hex, type InternalKeys } from "@meter/signing";
import type { SignedTarget } from "../../src";

/**
 * Release 1.0.0's signing of internal calls, as it shipped (packages/service-kit/src/internal/
 * request-signature.ts at that release): Ed25519 by the caller's key over `meter-internal-v1`, and a
 * verifier that knows nothing else. A service still on 1.0.0 during a rolling upgrade is this.
 */
function canonical(kid: string, timestamp: string, nonce: string, target: SignedTarget, identity: string, contentSha256: string): Buffer {
  return Buffer.from(
    ["meter-internal-v1", kid, timestamp, nonce, target.audience, target.method.toUpperCase(), target.path, identity, contentSha256].join("\n"),
  );
}

export function signAs100(keys: InternalKeys, identity: unknown, target: SignedTarget, now = Date.now()): Record<string, string> {
  const encoded = Buffer.from(JSON.stringify(identity)).toString("base64url");
  const timestamp = String(now);
  const nonce = randomBytes(16).toString("base64url");
  const contentSha256 = target.body === UNSIGNED_PAYLOAD ? UNSIGNED_PAYLOAD : sha256Hex(target.body ?? "");
  const { kid, key } = keys.signing;
  return {
    [InternalHeaders.identity]: encoded,
    [InternalHeaders.timestamp]: timestamp,
    [InternalHeaders.nonce]: nonce,
    [InternalHeaders.contentSha256]: contentSha256,
    [InternalHeaders.keyId]: kid,
    [InternalHeaders.signature]: sign(null, canonical(kid, timestamp, nonce, target, encoded, contentSha256), key).toString("base64url"),
  };
}

/** 1.0.0's check of a call's signature (its clock and replay checks left out: they did not change). */
export function verifiesAs100(keys: InternalKeys, headers: Record<string, string>, method: string, path: string): boolean {
  const kid = headers[InternalHeaders.keyId]!;
  const signer = keys.trusted.get(kid);
  if (!signer) return false;
  const target: SignedTarget = { audience: keys.self, method, path };
  const data = canonical(
    kid,
    headers[InternalHeaders.timestamp]!,
    headers[InternalHeaders.nonce]!,
    target,
    headers[InternalHeaders.identity]!,
    headers[InternalHeaders.contentSha256]!,
  );
  try {
    return verify(null, data, signer.key, Buffer.from(headers[InternalHeaders.signature]!, "base64url"));
  } catch {
    return false;
  }
}
