import { createHmac, createSecretKey, randomUUID, sign, timingSafeEqual, verify, type KeyObject } from "node:crypto";
import { Identity, InternalHeaders, UNSIGNED_PAYLOAD, type Deployable } from "@meter/contracts";
import { pairKey, parseInternalKeys, sha256Hex, type InternalKeys } from "@meter/signing";
import { NonceCache } from "./nonce-cache";

/** How far a signed call's timestamp may be from this process's clock. */
export const MAX_SKEW_MS = 60_000;

export const EMPTY_BODY_SHA256 = sha256Hex("");

/** What a signature binds: who is called, how, and with which body. */
export interface SignedTarget {
  /** The deployable meant to receive the call; another one refuses it. */
  audience: Deployable;
  method: string;
  /** Path and query exactly as sent. */
  path: string;
  /** The body as sent (its SHA-256 is signed), or UNSIGNED_PAYLOAD for a stream the caller cannot hash first. */
  body?: string | Buffer | typeof UNSIGNED_PAYLOAD;
}

export type VerifiedCall = { ok: true; identity: Identity; signer: Deployable; contentSha256: string } | { ok: false; reason: string };

/** The signature header of a MAC'd call: `v2;<audience kid>=<mac>[,<audience kid>=<mac>]`. */
const MAC_PREFIX = "v2;";

/**
 * Which scheme a process signs its calls with, and which it believes (INTERNAL_AUTH_SIGN,
 * INTERNAL_AUTH_ACCEPT): a release that changes the scheme first verifies both, then signs the new one
 * once every deployable verifies it, then refuses the old one (docs/deploy.md, Upgrading).
 */
export const INTERNAL_AUTH_SIGN = ["ed25519", "mac"] as const;
export const INTERNAL_AUTH_ACCEPT = ["both", "mac-only"] as const;
export interface InternalAuthSchemes {
  /** `ed25519`: what release 1.0.0 verifies, for a rolling upgrade; `mac`: the per-pair MAC. */
  sign: (typeof INTERNAL_AUTH_SIGN)[number];
  /** `both`: MACs and Ed25519 signatures; `mac-only`: once no caller signs Ed25519 any more. */
  accept: (typeof INTERNAL_AUTH_ACCEPT)[number];
}
/** What a process does unless told: what the upgrade from 1.0.0 needs (a 1.0.0 service verifies Ed25519 only). */
export const DEFAULT_INTERNAL_AUTH_SCHEMES: InternalAuthSchemes = { sign: "ed25519", accept: "both" };

/**
 * Signs and verifies internal calls for one process. A call carries an HMAC-SHA256 under the key of
 * its direction (caller -> audience, see pairKey in @meter/signing: only those two processes can
 * compute it) over the identity, both kids, the target deployable, method, path, the body's SHA-256,
 * a timestamp and a nonce: a sniffed call cannot be sent to another route, service or with another
 * body, and cannot be sent again to this process (its nonce is remembered for the whole window). A
 * replay to another replica of the same service within the window repeats an identical call, which
 * every internal operation makes harmless by being idempotent on its own ids. While the audience has
 * two keys listed (a rotation), the call carries a MAC for each. Calls signed with the caller's
 * Ed25519 key (what this replaced, docs/architecture.md) are signed and accepted as `schemes` says.
 */
export class InternalAuth {
  private readonly nonces = new NonceCache(2 * MAX_SKEW_MS);
  /** The MAC keys this process signs with, per audience: one per key the audience has listed. */
  private readonly outgoing = new Map<Deployable, { kid: string; key: KeyObject }[]>();
  /** The MAC key of each caller kid calling this process. */
  private readonly incoming = new Map<string, KeyObject>();

  constructor(
    readonly keys: InternalKeys,
    readonly schemes: InternalAuthSchemes = DEFAULT_INTERNAL_AUTH_SCHEMES,
  ) {}

  get self(): Deployable {
    return this.keys.self;
  }

  sign(identity: Identity, target: SignedTarget, now = Date.now()): Record<string, string> {
    const encoded = Buffer.from(JSON.stringify(identity)).toString("base64url");
    const timestamp = String(now);
    const nonce = randomUUID();
    const contentSha256 = target.body === UNSIGNED_PAYLOAD ? UNSIGNED_PAYLOAD : sha256Hex(target.body ?? "");
    const { kid } = this.keys.signing;
    const signature =
      this.schemes.sign === "ed25519"
        ? sign(null, legacyCanonical(kid, timestamp, nonce, target, encoded, contentSha256), this.keys.signing.key).toString("base64url")
        : `${MAC_PREFIX}${this.outgoingKeys(target.audience)
            .map((a) => `${a.kid}=${mac(a.key, canonical(kid, a.kid, timestamp, nonce, target, encoded, contentSha256)).toString("base64url")}`)
            .join(",")}`;
    return {
      [InternalHeaders.identity]: encoded,
      [InternalHeaders.timestamp]: timestamp,
      [InternalHeaders.nonce]: nonce,
      [InternalHeaders.contentSha256]: contentSha256,
      [InternalHeaders.keyId]: kid,
      [InternalHeaders.signature]: signature,
    };
  }

  /**
   * Checks a call addressed to this process. The body digest is only read from the signed headers
   * here; whoever reads the body compares it (see json-body.ts), since the body has not arrived yet.
   */
  verify(headers: Record<string, string | string[] | undefined>, method: string, path: string, now = Date.now()): VerifiedCall {
    const encoded = single(headers[InternalHeaders.identity]);
    const timestamp = single(headers[InternalHeaders.timestamp]);
    const nonce = single(headers[InternalHeaders.nonce]);
    const contentSha256 = single(headers[InternalHeaders.contentSha256]);
    const kid = single(headers[InternalHeaders.keyId]);
    const signature = single(headers[InternalHeaders.signature]);
    if (!encoded || !timestamp || !nonce || !contentSha256 || !kid || !signature) return { ok: false, reason: "missing internal identity" };
    const ts = Number(timestamp);
    if (!/^\d{1,16}$/.test(timestamp) || Math.abs(now - ts) > MAX_SKEW_MS) return { ok: false, reason: "stale internal identity" };
    const signer = this.keys.trusted.get(kid);
    if (!signer) return { ok: false, reason: "unknown signing key" };
    const target: SignedTarget = { audience: this.keys.self, method, path };
    if (this.schemes.accept === "mac-only" && !signature.startsWith(MAC_PREFIX))
      return { ok: false, reason: "Ed25519 internal signature refused: this service accepts MACs only (INTERNAL_AUTH_ACCEPT)" };
    if (!this.validSignature(signature, kid, timestamp, nonce, target, encoded, contentSha256)) return { ok: false, reason: "bad internal signature" };
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
    } catch {
      return { ok: false, reason: "unreadable internal identity" };
    }
    const identity = Identity.safeParse(parsed);
    if (!identity.success) return { ok: false, reason: "invalid internal identity" };
    // Only the gateway authenticates people and keys; a service speaks only as itself.
    if (identity.data.kind === "service" ? identity.data.service !== signer.signer : signer.signer !== "gateway") {
      return { ok: false, reason: `${signer.signer} may not sign a "${identity.data.kind}" identity` };
    }
    // Checked last, so a forged or stale call cannot use up a real caller's nonce.
    if (!this.nonces.admit(`${kid}:${nonce}`, now)) return { ok: false, reason: "replayed internal call" };
    return { ok: true, identity: identity.data, signer: signer.signer, contentSha256 };
  }

  private validSignature(
    signature: string,
    kid: string,
    timestamp: string,
    nonce: string,
    target: SignedTarget,
    encoded: string,
    contentSha256: string,
  ): boolean {
    const own = this.keys.signing.kid;
    if (signature.startsWith(MAC_PREFIX)) {
      const entry = signature
        .slice(MAC_PREFIX.length)
        .split(",")
        .find((e) => e.startsWith(`${own}=`));
      if (!entry) return false;
      const given = Buffer.from(entry.slice(own.length + 1), "base64url");
      const expected = mac(this.incomingKey(kid), canonical(kid, own, timestamp, nonce, target, encoded, contentSha256));
      return given.length === expected.length && timingSafeEqual(given, expected);
    }
    try {
      return verify(
        null,
        legacyCanonical(kid, timestamp, nonce, target, encoded, contentSha256),
        this.keys.trusted.get(kid)!.key,
        Buffer.from(signature, "base64url"),
      );
    } catch {
      return false;
    }
  }

  private outgoingKeys(audience: Deployable): { kid: string; key: KeyObject }[] {
    let keys = this.outgoing.get(audience);
    if (!keys) {
      const { self, signing } = this.keys;
      keys = [...this.keys.trusted]
        .filter(([, t]) => t.signer === audience)
        .map(([kid, t]) => ({ kid, key: createSecretKey(pairKey(signing, t, { callerKid: signing.kid, caller: self, audienceKid: kid, audience })) }));
      this.outgoing.set(audience, keys);
    }
    return keys;
  }

  private incomingKey(callerKid: string): KeyObject {
    let key = this.incoming.get(callerKid);
    if (!key) {
      const caller = this.keys.trusted.get(callerKid)!;
      const { self, signing } = this.keys;
      key = createSecretKey(pairKey(signing, caller, { callerKid, caller: caller.signer, audienceKid: signing.kid, audience: self }));
      this.incoming.set(callerKid, key);
    }
    return key;
  }
}

/** Keyed by a KeyObject made once per pair: an HMAC keyed by a Buffer builds one at every call (docs/benchmarks.md, "Issue 43"). */
function mac(key: KeyObject, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function canonical(
  callerKid: string,
  audienceKid: string,
  timestamp: string,
  nonce: string,
  target: SignedTarget,
  identity: string,
  contentSha256: string,
): string {
  return [
    "meter-internal-v2",
    callerKid,
    audienceKid,
    timestamp,
    nonce,
    target.audience,
    target.method.toUpperCase(),
    target.path,
    identity,
    contentSha256,
  ].join("\n");
}

/** What an Ed25519-signed call (before the MACs) covered. */
function legacyCanonical(kid: string, timestamp: string, nonce: string, target: SignedTarget, identity: string, contentSha256: string): Buffer {
  return Buffer.from(
    ["meter-internal-v1", kid, timestamp, nonce, target.audience, target.method.toUpperCase(), target.path, identity, contentSha256].join("\n"),
  );
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The signer and verifier of a process, from its INTERNAL_SIGNING_KEY, INTERNAL_PUBLIC_KEYS and INTERNAL_AUTH_* settings. */
export function createInternalAuth(
  self: Deployable,
  config: {
    INTERNAL_SIGNING_KEY: string;
    INTERNAL_PUBLIC_KEYS: string;
    INTERNAL_AUTH_SIGN?: InternalAuthSchemes["sign"];
    INTERNAL_AUTH_ACCEPT?: InternalAuthSchemes["accept"];
  },
): InternalAuth {
  return new InternalAuth(parseInternalKeys(self, config.INTERNAL_SIGNING_KEY, config.INTERNAL_PUBLIC_KEYS), {
    sign: config.INTERNAL_AUTH_SIGN ?? DEFAULT_INTERNAL_AUTH_SCHEMES.sign,
    accept: config.INTERNAL_AUTH_ACCEPT ?? DEFAULT_INTERNAL_AUTH_SCHEMES.accept,
  });
}
