import { createHash } from "node:crypto";
import type { KeyIdentity } from "@meter/contracts";
import { BillingUnreachable, type BillingClient, type VerifiedKey } from "@meter/service-clients";
import { AppError } from "@meter/service-kit";

type Entry = { identity: KeyIdentity | null; expiresAt: number };
type Lookup = { identity: KeyIdentity | null; keyExpiresAt: number | null };

/** Revocations remembered, so a lookup answered before a revocation cannot bring the key back. */
const REMEMBERED_REVOCATIONS = 100_000;

/**
 * Asks billing-ledger who a key belongs to and remembers the answer for at most `ttlMs` (at most 5 s),
 * counted from the moment the lookup started: the answer describes the key as it was then. Revocations
 * arrive over RabbitMQ (`revoke`) and take effect at once; the TTL is the fallback for a revocation this
 * process did not hear (broker down, queue being redeclared). A key that expires is remembered no
 * longer than its expires_at, and refused from then on. Concurrent first requests with one key share a
 * single lookup.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<Lookup>>();
  /** Key ids heard revoked; revocation is final, so one found here is refused whatever a lookup said. */
  private readonly revoked = new Set<string>();

  constructor(
    private readonly billing: Pick<BillingClient, "verifyKey">,
    private readonly ttlMs: number,
    private readonly maxEntries = 100_000,
  ) {}

  async verify(key: string): Promise<KeyIdentity> {
    const id = createHash("sha256").update(key).digest("base64url");
    const hit = this.cache.get(id);
    let identity: KeyIdentity | null;
    if (hit && hit.expiresAt > Date.now()) {
      identity = hit.identity;
    } else {
      const found = await this.lookupShared(id, key);
      // A shared lookup may finish after the key's expiry: refused then, as billing would.
      identity = found.keyExpiresAt !== null && found.keyExpiresAt <= Date.now() ? null : found.identity;
    }
    if (!identity || this.revoked.has(identity.key_id)) throw new AppError("invalid_api_key", "the API key is invalid, revoked or expired");
    return identity;
  }

  /** A key revoked in billing (`billing.key.revoked`): refused from now on by this process. */
  revoke(keyId: string): void {
    if (this.revoked.size >= REMEMBERED_REVOCATIONS) this.revoked.delete(this.revoked.values().next().value!);
    this.revoked.add(keyId);
    // Kept as a refusal for the rest of its window: revocation is final, billing would only confirm it.
    for (const entry of this.cache.values()) {
      if (entry.identity?.key_id === keyId) entry.identity = null;
    }
  }

  private lookupShared(id: string, key: string): Promise<Lookup> {
    let pending = this.inFlight.get(id);
    if (!pending) {
      const startedAt = Date.now();
      pending = this.lookup(key)
        .then((verified): Lookup => {
          const found = identityOf(verified);
          const until = Math.min(startedAt + this.ttlMs, found.keyExpiresAt ?? Infinity);
          if (this.ttlMs > 0 && until > Date.now()) this.remember(id, { identity: found.identity, expiresAt: until });
          return found;
        })
        .finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, pending);
    }
    return pending;
  }

  private async lookup(key: string): Promise<VerifiedKey | null> {
    try {
      return await this.billing.verifyKey(key);
    } catch (e) {
      if (e instanceof BillingUnreachable || e instanceof AppError) {
        throw new AppError("service_unavailable", "API keys cannot be checked right now; nothing was reserved", { cause: e });
      }
      throw e;
    }
  }

  private remember(id: string, entry: Entry): void {
    if (this.cache.size >= this.maxEntries) {
      // Drop the oldest insertion; a bounded cache cannot be grown without limit by random keys.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(id, entry);
  }
}

/** The identity alone (what is signed for the services) and when the key stops being valid. */
function identityOf(verified: VerifiedKey | null): Lookup {
  if (!verified) return { identity: null, keyExpiresAt: null };
  const { expires_at, ...identity } = verified;
  return { identity, keyExpiresAt: expires_at ? Date.parse(expires_at) : null };
}
