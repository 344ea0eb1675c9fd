import { z } from "zod";
import { ServiceName } from "./services";
import { TextModelProviders } from "./text-routing";

/**
 * The operator's health page (`GET /admin/v1/health`, served by the gateway): each service's readiness,
 * the broker's queues, and text's upstream providers. A part that cannot be read is marked unavailable
 * with its error; the answer itself still comes.
 */

export const ServiceHealth = z.object({
  service: ServiceName,
  /** Where it was asked, without credentials (text: one entry per replica); null for the gateway itself. */
  url: z.string().nullable(),
  ready: z.boolean(),
  /** How long its `/readyz` took to answer; null when it did not answer in time. */
  ms: z.int().nullable(),
  /** Its readiness checks as it named them (`database`: `ok`, `rabbitmq`: `not connected`...). */
  checks: z.record(z.string(), z.string()),
  /** Why it is not ready (no answer, or which checks failed); null when ready. */
  error: z.string().nullable(),
});
export type ServiceHealth = z.infer<typeof ServiceHealth>;

export const QueueHealth = z.object({
  name: z.string(),
  /** `work`: a consumer's queue; `dead_letter`: what its consumer gave up on (above 0 needs an operator); `unrouted`: published while no queue was bound. */
  role: z.enum(["work", "dead_letter", "unrouted"]),
  /** Messages ready for delivery; null while the queue is not declared (its consumer has not run on this broker). */
  messages: z.int().nullable(),
  consumers: z.int().nullable(),
});
export type QueueHealth = z.infer<typeof QueueHealth>;

export const BrokerHealth = z.object({
  available: z.boolean(),
  ms: z.int().nullable(),
  error: z.string().nullable(),
  /** Empty when the broker is unavailable. */
  queues: z.array(QueueHealth),
});
export type BrokerHealth = z.infer<typeof BrokerHealth>;

export const ProvidersHealth = z.object({
  available: z.boolean(),
  error: z.string().nullable(),
  /** As `GET /admin/v1/text/providers` answers; empty when text could not be asked. */
  models: z.array(TextModelProviders),
});
export type ProvidersHealth = z.infer<typeof ProvidersHealth>;

export const HealthReport = z.object({
  object: z.literal("health"),
  checked_at: z.string(),
  services: z.array(ServiceHealth),
  broker: BrokerHealth,
  providers: ProvidersHealth,
});
export type HealthReport = z.infer<typeof HealthReport>;
