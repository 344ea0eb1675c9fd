import type { CatalogModel } from "@meter/contracts";
import type { Bus, Consumer } from "@meter/messaging";
import type { Logger } from "@meter/service-kit";
import type { BillingClient } from "./billing-client";

/**
 * A copy of billing's tariff catalog, reloaded every few seconds and at once when billing announces a
 * change (`billing.catalog.changed`), so pricing a request needs no round trip and a change applies to
 * requests accepted after it within a second.
 */
export class CatalogCache {
  private models = new Map<string, CatalogModel>();
  private loadedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private changes: Consumer | undefined;

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

  /** Every model of the copy, enabled or not. */
  list(): CatalogModel[] {
    return [...this.models.values()];
  }

  async refresh(): Promise<void> {
    const catalog = await this.billing.catalog();
    this.models = new Map(catalog.models.map((m) => [m.id, m]));
    this.loadedAt = Date.now();
  }

  /**
   * Loads the catalog (if billing cannot be reached, it stays not ready and priced requests get 503 until
   * a reload succeeds), reloads it every `refreshMs`, and, given the bus, at once on every change billing
   * announces. Each process listens on its own exclusive queue, so every replica hears every change; the
   * periodic reload is the fallback when the bus is down or an event was missed.
   */
  async start(changes?: { bus: Pick<Bus, "consume">; queue: string }): Promise<void> {
    await this.refresh().catch((e: unknown) => this.logger.warn({ err: e }, "catalog not loaded yet; priced requests get 503 until it is"));
    this.timer = setInterval(() => {
      this.refresh().catch((e: unknown) => this.logger.warn({ err: e }, "catalog refresh failed; keeping the previous copy"));
    }, this.refreshMs);
    this.timer.unref();
    if (!changes) return;
    this.changes = await changes.bus
      .consume({
        queue: changes.queue,
        routingKeys: ["billing.catalog.changed"],
        exclusive: true,
        handler: async () => {
          await this.refresh().catch((e: unknown) => this.logger.warn({ err: e }, "catalog reload after a change failed; the periodic refresh will catch up"));
        },
      })
      .catch((e: unknown) => {
        this.logger.warn({ err: e }, "not listening for catalog changes; the periodic refresh applies them");
        return undefined;
      });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.changes?.stop();
  }
}
