import { z } from "zod";

/**
 * Webhooks (docs/api.md, "Webhooks"): an organization's endpoints, the events they subscribe to, and
 * what was delivered to them. The operator reaches them under `/admin/v1/organizations/{id}/webhooks`,
 * a member of the organization under the cabinet's `/webhooks`.
 */
export const WEBHOOK_EVENT_TYPES = ["budget.threshold", "balance.low", "key.revoked", "key.expired"] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);
export type WebhookEventType = z.infer<typeof WebhookEventType>;
/** Every event a delivery may carry: the subscribable ones and `test` (sent on request to one endpoint). */
export const WebhookDeliveredType = z.enum([...WEBHOOK_EVENT_TYPES, "test"]);

/** Endpoints one organization may have. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
export const MAX_WEBHOOK_URL_LENGTH = 2048;

export const CreateWebhookRequest = z.strictObject({
  url: z.string().min(1).max(MAX_WEBHOOK_URL_LENGTH).describe("https (http too outside production); a public address"),
  events: z
    .array(WebhookEventType)
    .min(1)
    .refine((events) => new Set(events).size === events.length, "events must not repeat"),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const WebhookEndpoint = z.object({
  id: z.uuid(),
  object: z.literal("webhook_endpoint"),
  organization_id: z.uuid(),
  url: z.string(),
  events: z.array(WebhookEventType),
  created_at: z.string(),
  secret_rotated_at: z.string().nullable(),
  secret: z.string().optional().describe("`whsec_` + base64: only in the answers to creating the endpoint and rotating its secret"),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;
export const WebhookEndpointList = z.object({ object: z.literal("list"), data: z.array(WebhookEndpoint) });

export const WebhookDeliveryStatus = z.enum(["pending", "succeeded", "failed"]);
export const WebhookAttempt = z.object({
  attempted_at: z.string(),
  response_status: z.number().int().nullable().describe("The receiver's HTTP status; null when no answer came (see error)"),
  error: z.string().nullable(),
  duration_ms: z.number().int(),
});
export const WebhookDelivery = z.object({
  id: z.uuid(),
  object: z.literal("webhook_delivery"),
  webhook_id: z.uuid(),
  event_id: z.string().describe("The `webhook-id` header: the same on every attempt"),
  event_type: WebhookDeliveredType,
  status: WebhookDeliveryStatus,
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_response_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  attempt_log: z.array(WebhookAttempt),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;
export const WebhookDeliveryList = z.object({ object: z.literal("list"), data: z.array(WebhookDelivery) });
export const WebhookListQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(50) });

/** An event of the organization as the cabinet shows it (a notice): its id, type, time and the payload's data. */
export const Notice = z.object({
  id: z.string(),
  object: z.literal("notice"),
  type: WebhookDeliveredType,
  created_at: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type Notice = z.infer<typeof Notice>;
export const NoticeList = z.object({ object: z.literal("list"), data: z.array(Notice) });

/** A test event's answer: the delivery it queued. */
export const WebhookTestSent = z.object({ object: z.literal("webhook_test"), event_id: z.string(), delivery_id: z.uuid() });
