import type { CatalogModel } from "@meter/contracts";
import type { Logger } from "@meter/service-kit";
import type { BillingClient } from "./billing-client";

/**
 * A copy of billing's tariff catalog, reloaded every few seconds and at once when billing announces a
 * change (`refresh()` from a `billing.catalog.changed` consumer), so pricing a request needs no round
 * trip and a change applies to requests accepted after it within a second.
 */
export class CatalogCache {
  private models = new Map<string, CatalogModel>();
  private loadedAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly billing: BillingClient,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  /** Whether the catalog was ever loaded: until it is, no model can be said not to exist. */
  get ready(): boolean {
    return this.loadedAt > 0;
  }

  get(id: string): CatalogModel | undefined {
    return this.models.get(id);
  }

  async refresh(): Promise<void> {
    const catalog = await this.billing.catalog();
    this.models = new Map(catalog.models.map((m) => [m.id, m]));
    this.loadedAt = Date.now();
  }

  start(): void {
    this.timer = setInterval(() => {
      this.refresh().catch((e: unknown) => this.logger.warn({ err: e }, "catalog refresh failed; keeping the previous copy"));
    }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
