import { createHash, createPrivateKey, createPublicKey, diffieHellman, hkdfSync, type KeyObject } from "node:crypto";
import type { Deployable } from "@meter/contracts";
import { InternalKeyError } from "./internal-keys";

/**
 * The MAC key of one direction between two deployables (caller -> audience), derived from the keys they
 * already have: X25519 agreement between the caller's private key and the audience's public key (each
 * Ed25519 key taken as its X25519 twin, as libsodium's crypto_sign_ed25519_*_to_curve25519 do), then
 * HKDF-SHA256 bound to both kids and both names in that order. Only those two processes can compute
 * it, and the reverse direction gets another key. No setting and no exchange is added: a process
 * derives each key once, from INTERNAL_SIGNING_KEY and INTERNAL_PUBLIC_KEYS.
 */
export function pairKey(
  own: { key: KeyObject },
  other: { key: KeyObject },
  direction: { callerKid: string; caller: Deployable; audienceKid: string; audience: Deployable },
): Buffer {
  const shared = diffieHellman({ privateKey: x25519Private(own.key), publicKey: x25519Public(other.key) });
  if (shared.every((b) => b === 0)) throw new InternalKeyError(`no key agreement with "${direction.callerKid}"/"${direction.audienceKid}"`);
  const info = ["meter-internal-mac-v1", direction.callerKid, direction.caller, direction.audienceKid, direction.audience].join("\n");
  return Buffer.from(hkdfSync("sha256", shared, "meter-internal-mac", info, 32));
}

const P = 2n ** 255n - 19n;
const X25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex");
const X25519_SPKI_PREFIX = Buffer.from("302a300506032b656e032100", "hex");

/** An Ed25519 private key's X25519 twin: the first half of SHA-512 of its seed (clamped by X25519 itself). */
function x25519Private(ed25519: KeyObject): KeyObject {
  const seed = Buffer.from(ed25519.export({ format: "jwk" }).d!, "base64url");
  const scalar = createHash("sha512").update(seed).digest().subarray(0, 32);
  return createPrivateKey({ key: Buffer.concat([X25519_PKCS8_PREFIX, scalar]), format: "der", type: "pkcs8" });
}

/** An Ed25519 public key's X25519 twin: the Montgomery u = (1 + y) / (1 - y) of its Edwards y. */
function x25519Public(ed25519: KeyObject): KeyObject {
  const raw = Buffer.from(ed25519.export({ format: "jwk" }).x!, "base64url");
  const yBytes = Buffer.from(raw);
  yBytes[31]! &= 0x7f;
  const y = fromLittleEndian(yBytes);
  if (y >= P || y === 1n) throw new InternalKeyError("an Ed25519 public key without an X25519 twin");
  const u = ((1n + y) * modPow((1n - y + P) % P, P - 2n)) % P;
  return createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, toLittleEndian(u)]), format: "der", type: "spki" });
}

function modPow(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base % P;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
  }
  return result;
}

function fromLittleEndian(bytes: Buffer): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
}

function toLittleEndian(n: bigint): Buffer {
  const out = Buffer.alloc(32);
  for (let i = 0, v = n; i < 32; i++, v >>= 8n) out[i] = Number(v & 0xffn);
  return out;
}
