import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from "node:crypto";

/**
 * billing-ledger's word on what it granted (docs/api.md, "Backups and the books cross-check"): every
 * hold placement and allowance grant it answers carries an Ed25519 signature over the hold id, its kind,
 * the service it was granted to, the organization, the key, the amount and until when it holds, made
 * with a key only billing-ledger has (GRANT_SIGNING_KEY). The holder keeps the signature with its
 * record; the books cross-check repairs a record only under a signature that verifies against
 * GRANT_PUBLIC_KEYS, which keeps old keys listed after a rotation so records signed before still verify.
 *
 * Formats, as INTERNAL_SIGNING_KEY's: the signing key is `<kid>.<base64url PKCS#8 DER>`; the public list
 * is `<kid>.<base64url SPKI DER>` entries separated by commas or white space. A signature is
 * `<kid>.<expiry, Unix seconds>.<base64url Ed25519 signature>`: it names the key that made it and
 * carries the one signed field the holder's record does not (the expiry).
 */
export interface Grant {
  hold_id: string;
  kind: "request" | "allowance";
  /** The service it was granted to (a hold's `source`). */
  source: string;
  organization_id: string;
  key_id: string;
  amount_microrub: number;
  /** From then on billing would have expired it unresolved: a record final later is not covered. */
  expires_at: Date;
}

export interface GrantKeys {
  signing: { kid: string; key: KeyObject };
  /** Every public key a grant may be verified with, by kid (the signing key's own among them). */
  trusted: ReadonlyMap<string, KeyObject>;
}

/** Why a grant's signature does not vouch for a claim. */
export type GrantRefusal = "unsigned" | "unknown_key" | "bad_signature";

export class GrantKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GrantKeyError";
  }
}

const KID = /^[A-Za-z0-9_-]{1,64}$/;
const DOMAIN = "meter-grant-v1";

export function parseGrantKeys(signingKey: string, publicKeys: string): GrantKeys {
  const [kid, der] = splitOnce(signingKey.trim(), ".");
  if (!kid || !der || !KID.test(kid)) throw new GrantKeyError("GRANT_SIGNING_KEY must be <kid>.<base64url PKCS#8 DER>");
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(der, "base64url"), format: "der", type: "pkcs8" });
  } catch (e) {
    throw new GrantKeyError(`GRANT_SIGNING_KEY is not a readable private key: ${(e as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw new GrantKeyError("GRANT_SIGNING_KEY must be an Ed25519 key");
  const trusted = new Map<string, KeyObject>();
  for (const entry of publicKeys.split(/[\s,]+/).filter(Boolean)) {
    const [entryKid, spki] = splitOnce(entry, ".");
    if (!entryKid || !spki || !KID.test(entryKid)) throw new GrantKeyError(`GRANT_PUBLIC_KEYS: "${entry.slice(0, 40)}" is not <kid>.<base64url SPKI DER>`);
    if (trusted.has(entryKid)) throw new GrantKeyError(`GRANT_PUBLIC_KEYS: kid "${entryKid}" is listed twice`);
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: Buffer.from(spki, "base64url"), format: "der", type: "spki" });
    } catch (e) {
      throw new GrantKeyError(`GRANT_PUBLIC_KEYS: the key of "${entryKid}" is not readable: ${(e as Error).message}`);
    }
    if (publicKey.asymmetricKeyType !== "ed25519") throw new GrantKeyError(`GRANT_PUBLIC_KEYS: "${entryKid}" is not an Ed25519 key`);
    trusted.set(entryKid, publicKey);
  }
  const own = trusted.get(kid);
  const ownDer = createPublicKey(key).export({ format: "der", type: "spki" });
  if (!own || !ownDer.equals(own.export({ format: "der", type: "spki" }))) {
    throw new GrantKeyError(`GRANT_PUBLIC_KEYS must list GRANT_SIGNING_KEY's own public key under "${kid}"`);
  }
  return { signing: { kid, key }, trusted };
}

/** A new grant key pair in the settings' formats (`pnpm internal-keys` prints one with every key set). */
export function generateGrantKeyPair(kid = `grant-${new Date().toISOString().slice(0, 10).replace(/-/g, "")}-${randomBytes(2).toString("hex")}`): {
  signingKey: string;
  publicKey: string;
} {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    signingKey: `${kid}.${privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url")}`,
    publicKey: `${kid}.${publicKey.export({ format: "der", type: "spki" }).toString("base64url")}`,
  };
}

/** billing-ledger's signature over a grant (one Ed25519 signature, with a key parsed once). */
export function signGrant(keys: GrantKeys, grant: Grant): string {
  const expiry = Math.floor(grant.expires_at.getTime() / 1000);
  const signature = sign(null, Buffer.from(grantMessage(grant, expiry)), keys.signing.key);
  return `${keys.signing.kid}.${expiry}.${signature.toString("base64url")}`;
}

/**
 * Whether `signature` is billing's over this claim (every field but the expiry, which the signature
 * carries): the grant as signed, with its expiry, or why it does not vouch for the claim.
 */
export function verifyGrant(
  trusted: GrantKeys["trusted"],
  claim: Omit<Grant, "expires_at">,
  signature: string | null | undefined,
): { ok: true; grant: Grant } | { ok: false; refused: GrantRefusal } {
  if (!signature) return { ok: false, refused: "unsigned" };
  const [kid, expiryText, sig] = signature.split(".");
  const key = kid === undefined ? undefined : trusted.get(kid);
  if (!key) return { ok: false, refused: "unknown_key" };
  const expiry = Number(expiryText);
  if (!sig || !/^[0-9]{1,12}$/.test(expiryText ?? "")) return { ok: false, refused: "bad_signature" };
  const ok = verify(null, Buffer.from(grantMessage(claim, expiry)), key, Buffer.from(sig, "base64url"));
  return ok ? { ok: true, grant: { ...claim, expires_at: new Date(expiry * 1000) } } : { ok: false, refused: "bad_signature" };
}

/** What is signed: every field, in one order, with a domain of its own (no other signature of ours can stand for it). */
function grantMessage(g: Omit<Grant, "expires_at">, expiry: number): string {
  return [DOMAIN, g.hold_id, g.kind, g.source, g.organization_id, g.key_id, String(g.amount_microrub), String(expiry)].join("\n");
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}
