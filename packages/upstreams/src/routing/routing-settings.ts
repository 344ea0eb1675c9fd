import { env } from "@meter/config";
import type { Logger } from "@meter/service-kit";
import type { Pool } from "pg";
import { ProviderHealthStore } from "./pg-provider-health.store";
import { SharedProviderHealth } from "./provider-health";

type RetryKey<P extends string> = `${P}_UPSTREAM_RETRY_DELAYS_MS`;
type BreakerKey<P extends string> = `${P}_PROVIDER_FAILURES_TO_OPEN` | `${P}_PROVIDER_COOLDOWN_MS`;

/** A service's routing settings as parsed (routingSettings). */
export type RoutingConfig<P extends string> = Record<RetryKey<P>, number[]> & Record<BreakerKey<P>, number>;

/**
 * The settings of a service's upstream routing, named after the service (`TEXT_...`, `MEDIA_JOBS_...`), the
 * same rules for each: the inline retries of a model's only provider (waits between them, nothing having
 * run), and the breaker of a provider of a model with several (consecutive failures that open it; how long
 * it is then passed over before one trial call, or its Retry-After when longer).
 */
export function routingSettings<P extends string>(prefix: P) {
  return {
    [`${prefix}_UPSTREAM_RETRY_DELAYS_MS`]: env.intList([250, 1000], { min: 0, max: 60_000, maxItems: 5 }),
    [`${prefix}_PROVIDER_FAILURES_TO_OPEN`]: env.int(3, { min: 1, max: 100 }),
    [`${prefix}_PROVIDER_COOLDOWN_MS`]: env.int(30_000, { min: 100 }),
  } as { [K in RetryKey<P>]: ReturnType<typeof env.intList> } & { [K in BreakerKey<P>]: ReturnType<typeof env.int> };
}

/** The inline retry waits of a service's routing settings. */
export function retryDelaysOf<P extends string>(config: RoutingConfig<P>, prefix: P): readonly number[] {
  return (config as Record<string, number[]>)[`${prefix}_UPSTREAM_RETRY_DELAYS_MS`]!;
}

/** The providers' breakers of a service, kept in its database (the tables ProviderHealthStore names) and shared by its replicas. */
export function sharedProviderHealth<P extends string>(pool: Pool, config: RoutingConfig<P>, prefix: P, logger: Logger): SharedProviderHealth {
  const settings = config as Record<string, number>;
  return new SharedProviderHealth(
    new ProviderHealthStore(pool),
    { failuresToOpen: settings[`${prefix}_PROVIDER_FAILURES_TO_OPEN`]!, cooldownMs: settings[`${prefix}_PROVIDER_COOLDOWN_MS`]! },
    logger,
  );
}
