import type { Logger } from "@meter/service-kit";
import { everyInterval, type Stoppable } from "../holds/interval";
import type { ApiKeyService } from "./api-key.service";

/**
 * Closes keys whose expires_at passed: shown expired, `billing.key.expired` published, their allowances
 * called back. Verification refuses such a key from its expires_at on whatever this sweep's pace; the
 * sweep returns the money parked for it. Safe on several replicas: a key is closed by the one update that
 * still finds it active, one organization per transaction (ApiKeyRepository.expireDue).
 */
export class KeyExpiryService {
  constructor(
    private readonly keys: Pick<ApiKeyService, "expireDue">,
    private readonly logger: Logger,
  ) {}

  async sweep(): Promise<string[]> {
    const { expired, recallFailed } = await this.keys.expireDue();
    if (expired.length > 0) this.logger.info({ keys: expired }, "API keys expired; their allowances called back");
    if (recallFailed) this.logger.warn({ keys: expired, err: recallFailed }, "expired keys' allowances could not be called back; they return when idle");
    return expired;
  }

  start(intervalMs: number): Stoppable {
    return everyInterval(
      intervalMs,
      () => this.sweep(),
      (err) => this.logger.warn({ err }, "the key expiry sweep failed; the next one tries again"),
    );
  }
}
