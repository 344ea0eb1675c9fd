import { createHash } from "node:crypto";
import type { KeyIdentity } from "@meter/contracts";
import { BillingUnreachable, type BillingClient } from "@meter/service-clients";
import { AppError } from "@meter/service-kit";

type Entry = { identity: KeyIdentity | null; expiresAt: number };

/** Revocations remembered, so a lookup answered before a revocation cannot bring the key back. */
const REMEMBERED_REVOCATIONS = 100_000;

/**
 * Asks billing-ledger who a key belongs to and remembers the answer for at most `ttlMs` (at most 5 s),
 * counted from the moment the lookup started: the answer describes the key as it was then. Revocations
 * arrive over RabbitMQ (`revoke`) and take effect at once; the TTL is the fallback for a revocation this
 * process did not hear (broker down, queue being redeclared). Concurrent first requests with one key
 * share a single lookup.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<KeyIdentity | null>>();
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
      identity = await this.lookupShared(id, key);
    }
    if (!identity || this.revoked.has(identity.key_id)) throw new AppError("invalid_api_key", "the API key is invalid or revoked");
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

  private lookupShared(id: string, key: string): Promise<KeyIdentity | null> {
    let pending = this.inFlight.get(id);
    if (!pending) {
      const startedAt = Date.now();
      pending = this.lookup(key)
        .then((identity) => {
          if (this.ttlMs > 0) this.remember(id, { identity, expiresAt: startedAt + this.ttlMs });
          return identity;
        })
        .finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, pending);
    }
    return pending;
  }

  private async lookup(key: string): Promise<KeyIdentity | null> {
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
