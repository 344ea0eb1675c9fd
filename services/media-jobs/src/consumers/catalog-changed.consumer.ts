import type { Bus, Consumer } from "@meter/messaging";
import type { CatalogCache } from "@meter/service-clients";
import type { Logger } from "@meter/service-kit";

/**
 * Reloads the catalog as soon as billing announces a change, so a tariff or a disabled model applies
 * to jobs accepted within a second; the periodic refresh stays as the fallback when the bus is down (or
 * the event was missed). Each process has its own exclusive queue, so every replica hears every change.
 */
export function startCatalogChangedConsumer(bus: Bus, catalog: CatalogCache, logger: Logger): Promise<Consumer> {
  return bus.consume({
    queue: "media-jobs.catalog-changed",
    routingKeys: ["billing.catalog.changed"],
    exclusive: true,
    handler: async () => {
      await catalog.refresh().catch((e: unknown) => logger.warn({ err: e }, "catalog reload after a change failed; the periodic refresh will catch up"));
    },
  });
}
