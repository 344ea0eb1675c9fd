import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { Deployable } from "@meter/contracts";
import { generateGrantKeyPair } from "./grant-keys";

/**
 * The keys of internal calls. Every deployable signs with an Ed25519 private key of its own
 * (INTERNAL_SIGNING_KEY, a secret) and knows every deployable's public keys (INTERNAL_PUBLIC_KEYS,
 * not secret: one shared list). A verifier therefore holds nothing that could sign: a compromised
 * service can speak only as itself, and only the gateway can speak for a key holder or the operator.
 * A rotation lists the new public key beside the old one, then switches the signer, then drops the
 * old one; nothing restarts all at once.
 *
 * Formats: a signing key is `<kid>.<base64url PKCS#8 DER>`; the public list is entries
 * `<deployable>:<kid>.<base64url SPKI DER>` separated by commas or white space. A kid is unique
 * across the system (e.g. `text-20261123-3f9a`).
 */
export interface InternalKeys {
  /** The deployable this process is, and signs as. */
  self: Deployable;
  signing: { kid: string; key: KeyObject };
  /** Every public key this process accepts, by kid. */
  trusted: ReadonlyMap<string, { signer: Deployable; key: KeyObject }>;
}

export class InternalKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InternalKeyError";
  }
}

const KID = /^[A-Za-z0-9_-]{1,64}$/;

export function parseInternalKeys(self: Deployable, signingKey: string, publicKeys: string): InternalKeys {
  const [kid, der] = splitOnce(signingKey.trim(), ".");
  if (!kid || !der || !KID.test(kid)) throw new InternalKeyError("INTERNAL_SIGNING_KEY must be <kid>.<base64url PKCS#8 DER>");
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(der, "base64url"), format: "der", type: "pkcs8" });
  } catch (e) {
    throw new InternalKeyError(`INTERNAL_SIGNING_KEY is not a readable private key: ${(e as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw new InternalKeyError("INTERNAL_SIGNING_KEY must be an Ed25519 key");

  const trusted = new Map<string, { signer: Deployable; key: KeyObject }>();
  for (const entry of publicKeys.split(/[\s,]+/).filter(Boolean)) {
    const [signer, rest] = splitOnce(entry, ":");
    const [entryKid, spki] = splitOnce(rest ?? "", ".");
    const parsedSigner = Deployable.safeParse(signer);
    if (!parsedSigner.success || !entryKid || !spki || !KID.test(entryKid)) {
      throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS: "${entry.slice(0, 40)}" is not <deployable>:<kid>.<base64url SPKI DER>`);
    }
    if (trusted.has(entryKid)) throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS: kid "${entryKid}" is listed twice`);
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: Buffer.from(spki, "base64url"), format: "der", type: "spki" });
    } catch (e) {
      throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS: the key of "${entryKid}" is not readable: ${(e as Error).message}`);
    }
    if (publicKey.asymmetricKeyType !== "ed25519") throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS: "${entryKid}" is not an Ed25519 key`);
    trusted.set(entryKid, { signer: parsedSigner.data, key: publicKey });
  }
  const own = trusted.get(kid);
  if (!own || own.signer !== self) {
    throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS must list this process's own key "${kid}" as ${self}`);
  }
  const ownDer = createPublicKey(key).export({ format: "der", type: "spki" });
  if (!ownDer.equals(own.key.export({ format: "der", type: "spki" }))) {
    throw new InternalKeyError(`INTERNAL_PUBLIC_KEYS lists another public key under "${kid}" than INTERNAL_SIGNING_KEY's`);
  }
  return { self, signing: { kid, key }, trusted };
}

/** A new key pair in the settings' formats. */
export function generateInternalKeyPair(
  signer: Deployable,
  kid = `${signer}-${new Date().toISOString().slice(0, 10).replace(/-/g, "")}-${randomBytes(2).toString("hex")}`,
): {
  kid: string;
  signingKey: string;
  publicKey: string;
} {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    kid,
    signingKey: `${kid}.${privateKey.export({ format: "der", type: "pkcs8" }).toString("base64url")}`,
    publicKey: `${signer}:${kid}.${publicKey.export({ format: "der", type: "spki" }).toString("base64url")}`,
  };
}

/**
 * Fresh keys for every deployable at once (the local runner and the tests): what each process is
 * given as INTERNAL_SIGNING_KEY, the public list all of them share, and billing-ledger's grant key
 * (GRANT_SIGNING_KEY, GRANT_PUBLIC_KEYS: ./grant-keys.ts).
 */
export function generateInternalKeySet(): InternalKeySet {
  const pairs = Deployable.options.map((d) => [d, generateInternalKeyPair(d)] as const);
  const grant = generateGrantKeyPair();
  return {
    signingKeys: Object.fromEntries(pairs.map(([d, p]) => [d, p.signingKey])) as Record<Deployable, string>,
    publicKeys: pairs.map(([, p]) => p.publicKey).join(","),
    grantSigningKey: grant.signingKey,
    grantPublicKeys: grant.publicKey,
  };
}

export interface InternalKeySet {
  /** Each deployable's own INTERNAL_SIGNING_KEY. */
  signingKeys: Record<Deployable, string>;
  /** INTERNAL_PUBLIC_KEYS, the same for every process. */
  publicKeys: string;
  /** billing-ledger's GRANT_SIGNING_KEY (a secret of billing-ledger alone). */
  grantSigningKey: string;
  /** GRANT_PUBLIC_KEYS (not secret). */
  grantPublicKeys: string;
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
}
