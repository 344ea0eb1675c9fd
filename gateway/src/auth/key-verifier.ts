import { createHash } from "node:crypto";
import { VerifyKeyResponse, type KeyIdentity } from "@meter/contracts";
import { AppError, InternalCallError, InternalHttpError, type InternalClient } from "@meter/service-kit";

type Entry = { identity: KeyIdentity | null; expiresAt: number };

/**
 * Asks billing-ledger who a key belongs to and remembers the answer for at most `ttlMs` (at most 5 s),
 * so a revoked key stops working on every gateway process within that window without a database
 * round trip per request. Concurrent first requests with one key share a single lookup.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<KeyIdentity | null>>();

  constructor(
    private readonly billing: InternalClient,
    private readonly ttlMs: number,
    private readonly maxEntries = 100_000,
  ) {}

  async verify(key: string): Promise<KeyIdentity> {
    const id = createHash("sha256").update(key).digest("base64url");
    const now = Date.now();
    const hit = this.cache.get(id);
    let identity: KeyIdentity | null;
    if (hit && hit.expiresAt > now) {
      identity = hit.identity;
    } else {
      let pending = this.inFlight.get(id);
      if (!pending) {
        pending = this.lookup(key).finally(() => this.inFlight.delete(id));
        this.inFlight.set(id, pending);
      }
      identity = await pending;
      if (this.ttlMs > 0) this.remember(id, { identity, expiresAt: Date.now() + this.ttlMs });
    }
    if (!identity) throw new AppError("invalid_api_key", "the API key is invalid or revoked");
    return identity;
  }

  private async lookup(key: string): Promise<KeyIdentity | null> {
    try {
      const { body } = await this.billing.call("POST", "/internal/v1/keys/verify", { key }, { timeoutMs: 5000 });
      return VerifyKeyResponse.parse(body).identity;
    } catch (e) {
      if (e instanceof InternalHttpError && e.status === 401) return null;
      if (e instanceof InternalHttpError || e instanceof InternalCallError) {
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
