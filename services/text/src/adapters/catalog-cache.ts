import { Catalog, type CatalogModel } from "@meter/contracts";
import type { InternalClient, Logger } from "@meter/service-kit";

/**
 * A copy of billing's tariff catalog, reloaded every few seconds, so pricing a request needs no round
 * trip and a tariff change applies to requests accepted after it within the refresh interval.
 */
export class CatalogCache {
  private models = new Map<string, CatalogModel>();
  private loadedAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly billing: InternalClient,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  get ready(): boolean {
    return this.loadedAt > 0;
  }

  get(id: string): CatalogModel | undefined {
    return this.models.get(id);
  }

  async refresh(): Promise<void> {
    const { body } = await this.billing.call("GET", "/internal/v1/catalog", undefined, { timeoutMs: 5000 });
    const catalog = Catalog.parse(body);
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
