import { z } from "zod";
import { CommonConfig, env, parseConfig } from "@meter/config";

export const BillingConfig = CommonConfig.extend({
  BILLING_LEDGER_PORT: env.port(8084),
  BILLING_LEDGER_DATABASE_URL: env.url("postgresql://postgres@127.0.0.1:5432/meter_billing_ledger"),
  RABBITMQ_URL: env.string("amqp://guest:guest@127.0.0.1:5672"),
  /** The day a daily budget counts from starts at 00:00 in this zone. */
  BUDGET_TIMEZONE: env.string("UTC"),
  /** Holds nobody resolved are expired (and reported) only after this long. */
  HOLD_EXPIRY_HOURS: env.int(72, { min: 1 }),
  HOLD_SWEEP_INTERVAL_MS: env.int(60_000, { min: 100 }),
  DATABASE_POOL_SIZE: env.int(10, { min: 1 }),
});
export type BillingConfig = z.infer<typeof BillingConfig>;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): BillingConfig {
  return parseConfig(BillingConfig, source);
}
