import {
  MAX_WEBHOOK_ENDPOINTS,
  type CreateWebhookRequest,
  type Notice,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventType,
} from "@meter/contracts";
import { BillingErrors, WebhookErrors } from "../errors";
import type { WebhookEndpoint as EndpointRow, WebhookEvent } from "../generated/prisma/client";
import type { DeliveryWithLog, WebhookRepository } from "./webhook.repository";
import { newWebhookSecret } from "./webhook-signature";
import { checkWebhookUrl, type OutboundPolicy } from "./webhook-url";

/**
 * An organization's webhook endpoints (the operator's and its members' alike: the routes decide which
 * organization), their delivery logs, test events and the organization's notices.
 */
export class WebhookService {
  constructor(
    private readonly rows: WebhookRepository,
    private readonly policy: OutboundPolicy,
  ) {}

  async create(organizationId: string, input: CreateWebhookRequest): Promise<WebhookEndpoint> {
    await this.organization(organizationId);
    const url = await checkWebhookUrl(input.url, this.policy);
    const secret = newWebhookSecret();
    const row = await this.rows.create({ organizationId, url: url.href, events: input.events, secret }, MAX_WEBHOOK_ENDPOINTS);
    if (row === "too_many") throw WebhookErrors.tooMany(MAX_WEBHOOK_ENDPOINTS);
    return { ...renderEndpoint(row), secret };
  }

  async list(organizationId: string): Promise<WebhookEndpoint[]> {
    await this.organization(organizationId);
    return (await this.rows.list(organizationId)).map(renderEndpoint);
  }

  async delete(organizationId: string, id: string): Promise<WebhookEndpoint> {
    const row = await this.rows.delete(organizationId, id);
    if (!row) throw WebhookErrors.notFound(id);
    return renderEndpoint(row);
  }

  async rotate(organizationId: string, id: string): Promise<WebhookEndpoint> {
    const secret = newWebhookSecret();
    const row = await this.rows.rotate(organizationId, id, secret);
    if (!row) throw WebhookErrors.notFound(id);
    return { ...renderEndpoint(row), secret };
  }

  async test(organizationId: string, id: string): Promise<{ object: "webhook_test"; event_id: string; delivery_id: string }> {
    const row = await this.rows.find(organizationId, id);
    if (!row) throw WebhookErrors.notFound(id);
    const sent = await this.rows.emitTest(organizationId, id, {
      organization_id: organizationId,
      webhook_id: id,
      message: "A test event: this endpoint receives and verifies Meter's webhooks.",
    });
    return { object: "webhook_test", event_id: sent.eventId, delivery_id: sent.deliveryId };
  }

  async deliveries(organizationId: string, id: string, limit: number): Promise<WebhookDelivery[]> {
    const row = await this.rows.find(organizationId, id);
    if (!row) throw WebhookErrors.notFound(id);
    return (await this.rows.deliveries(id, limit)).map(renderDelivery);
  }

  /** Sends a failed delivery once more (docs/api.md, "Webhooks"). */
  async redeliver(organizationId: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
    if (!(await this.rows.find(organizationId, id))) throw WebhookErrors.notFound(id);
    const done = await this.rows.redeliver(id, deliveryId);
    if (!done) throw WebhookErrors.deliveryNotFound(deliveryId);
    if (!done.redelivered) throw WebhookErrors.deliveryNotFailed(deliveryId, done.row.status);
    return renderDelivery(done.row);
  }

  async notices(organizationId: string, limit: number): Promise<Notice[]> {
    await this.organization(organizationId);
    return (await this.rows.events(organizationId, limit)).map(renderNotice);
  }

  private async organization(id: string): Promise<void> {
    if (!(await this.rows.organizationExists(id))) throw BillingErrors.organizationNotFound(id);
  }
}

function renderEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    object: "webhook_endpoint",
    organization_id: row.organizationId,
    url: row.url,
    events: row.events as WebhookEventType[],
    created_at: row.createdAt.toISOString(),
    secret_rotated_at: row.secretRotatedAt?.toISOString() ?? null,
  };
}

function renderDelivery(row: DeliveryWithLog): WebhookDelivery {
  return {
    id: row.id,
    object: "webhook_delivery",
    webhook_id: row.endpointId,
    event_id: row.eventId,
    event_type: row.event.type as WebhookDelivery["event_type"],
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === "pending" ? row.nextAttemptAt.toISOString() : null,
    last_response_status: row.lastResponseStatus,
    last_error: row.lastError,
    created_at: row.createdAt.toISOString(),
    completed_at: row.completedAt?.toISOString() ?? null,
    attempt_log: row.attemptLog.map((a) => ({
      attempted_at: a.attemptedAt.toISOString(),
      response_status: a.responseStatus,
      error: a.error,
      duration_ms: a.durationMs,
    })),
  };
}

function renderNotice(row: WebhookEvent): Notice {
  const body = JSON.parse(row.body) as { data?: Record<string, unknown> };
  return { id: row.id, object: "notice", type: row.type as Notice["type"], created_at: row.createdAt.toISOString(), data: body.data ?? {} };
}
