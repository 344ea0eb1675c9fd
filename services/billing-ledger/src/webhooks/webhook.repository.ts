import type { Db } from "../db";
import type { WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint, WebhookEvent } from "../generated/prisma/client";

/** A delivery a worker claimed: what it sends, and the attempt count its result is recorded against. */
export interface ClaimedDelivery {
  id: string;
  organization_id: string;
  attempts: number;
  created_at: Date;
  url: string;
  secret: string;
  event_id: string;
  body: string;
}

export type DeliveryWithLog = WebhookDelivery & { event: Pick<WebhookEvent, "type">; attemptLog: WebhookDeliveryAttempt[] };

/** Webhook endpoints, their events and deliveries (Prisma, and SQL where a row must be claimed). */
export class WebhookRepository {
  constructor(private readonly db: Db) {}

  organizationExists(id: string): Promise<boolean> {
    return this.db.organization.count({ where: { id } }).then((n) => n > 0);
  }

  /** Creates the endpoint unless the organization already has `max` (checked under the organization's row lock). */
  create(data: { organizationId: string; url: string; events: string[]; secret: string }, max: number): Promise<WebhookEndpoint | "too_many"> {
    return this.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM organizations WHERE id = ${data.organizationId}::uuid FOR UPDATE`;
      if ((await tx.webhookEndpoint.count({ where: { organizationId: data.organizationId } })) >= max) return "too_many";
      return tx.webhookEndpoint.create({ data });
    });
  }

  list(organizationId: string): Promise<WebhookEndpoint[]> {
    return this.db.webhookEndpoint.findMany({ where: { organizationId }, orderBy: [{ createdAt: "desc" }, { id: "asc" }] });
  }

  async find(organizationId: string, id: string): Promise<WebhookEndpoint | undefined> {
    return (await this.db.webhookEndpoint.findFirst({ where: { id, organizationId } })) ?? undefined;
  }

  async delete(organizationId: string, id: string): Promise<WebhookEndpoint | undefined> {
    const row = await this.find(organizationId, id);
    if (!row) return undefined;
    await this.db.webhookEndpoint.deleteMany({ where: { id, organizationId } });
    return row;
  }

  async rotate(organizationId: string, id: string, secret: string): Promise<WebhookEndpoint | undefined> {
    const { count } = await this.db.webhookEndpoint.updateMany({ where: { id, organizationId }, data: { secret, secretRotatedAt: new Date() } });
    return count === 0 ? undefined : this.find(organizationId, id);
  }

  /** A `test` event for one endpoint; its delivery's id. */
  async emitTest(organizationId: string, endpointId: string, data: Record<string, unknown>): Promise<{ eventId: string; deliveryId: string }> {
    // Two statements: a statement does not see the rows a function it calls inserted.
    const row = await this.db.$transaction(async (tx) => {
      const [emitted] = await tx.$queryRaw<{ id: string }[]>`
        SELECT webhook_event_emit(${organizationId}::uuid, 'test', NULL, ${JSON.stringify(data)}::jsonb, ${endpointId}::uuid) AS id`;
      const [delivery] = await tx.$queryRaw<{ id: string }[]>`SELECT d.id FROM webhook_deliveries d WHERE d.event_id = ${emitted?.id ?? ""}`;
      return delivery && emitted ? { event_id: emitted.id, delivery_id: delivery.id } : undefined;
    });
    if (!row) throw new Error(`no delivery was queued for webhook endpoint ${endpointId}`);
    return { eventId: row.event_id, deliveryId: row.delivery_id };
  }

  /**
   * A failed delivery of the endpoint made pending again, due now: the worker tries it once more, and
   * marks it failed again if that attempt fails (its retry window is over). `redelivered` is false when
   * it was not failed (the row as it is); undefined when the endpoint has no such delivery.
   */
  async redeliver(endpointId: string, deliveryId: string): Promise<{ row: DeliveryWithLog; redelivered: boolean } | undefined> {
    const { count } = await this.db.webhookDelivery.updateMany({
      where: { id: deliveryId, endpointId, status: "failed" },
      data: { status: "pending", nextAttemptAt: new Date(), completedAt: null },
    });
    const row = await this.db.webhookDelivery.findFirst({
      where: { id: deliveryId, endpointId },
      include: { event: { select: { type: true } }, attemptLog: { orderBy: { id: "asc" } } },
    });
    return row ? { row, redelivered: count === 1 } : undefined;
  }

  deliveries(endpointId: string, limit: number): Promise<DeliveryWithLog[]> {
    return this.db.webhookDelivery.findMany({
      where: { endpointId },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: limit,
      include: { event: { select: { type: true } }, attemptLog: { orderBy: { id: "asc" } } },
    });
  }

  events(organizationId: string, limit: number): Promise<WebhookEvent[]> {
    return this.db.webhookEvent.findMany({ where: { organizationId }, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: limit });
  }

  /**
   * Claims up to `limit` due deliveries for `leaseMs`: the candidates are read without locks, then each
   * organization's are leased by one conditional update (still pending and due), so replicas take
   * different rows (the second update of a row waits for the first and then finds it leased) and no
   * statement spans organizations (docs/scale.md). The lease keeps a claimed row from others until its
   * attempt is recorded or the lease ends.
   */
  async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const due = await this.db.$queryRaw<{ id: string; organization_id: string }[]>`
      SELECT d.id, d.organization_id FROM webhook_deliveries d
      WHERE d.status = 'pending' AND d.next_attempt_at <= now()
      ORDER BY d.next_attempt_at
      LIMIT ${limit}`;
    const byOrganization = new Map<string, string[]>();
    for (const d of due) byOrganization.set(d.organization_id, [...(byOrganization.get(d.organization_id) ?? []), d.id]);
    const claimed: ClaimedDelivery[] = [];
    for (const [organizationId, ids] of byOrganization) {
      claimed.push(
        ...(await this.db.$queryRaw<ClaimedDelivery[]>`
          UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
          FROM webhook_endpoints e, webhook_events ev
          WHERE d.organization_id = ${organizationId}::uuid AND d.id = ANY (${ids}::uuid[])
            AND d.status = 'pending' AND d.next_attempt_at <= now()
            AND e.organization_id = d.organization_id AND e.id = d.endpoint_id
            AND ev.organization_id = d.organization_id AND ev.id = d.event_id
          RETURNING d.id, d.organization_id, d.attempts, d.created_at, e.url, e.secret, ev.id AS event_id, ev.body`),
      );
    }
    return claimed;
  }

  /**
   * Records one attempt of a claimed delivery and its next state; a delivery recorded since (another
   * worker after the lease ended) is left as it is.
   */
  async record(
    claimed: ClaimedDelivery,
    attempt: { at: Date; status: number | null; error: string | null; durationMs: number },
    next: { status: "pending" | "succeeded" | "failed"; nextAttemptAt: Date | null },
  ): Promise<void> {
    await this.db.$transaction(async (tx) => {
      const { count } = await tx.webhookDelivery.updateMany({
        where: { id: claimed.id, organizationId: claimed.organization_id, status: "pending", attempts: claimed.attempts },
        data: {
          attempts: claimed.attempts + 1,
          status: next.status,
          lastAttemptAt: attempt.at,
          lastResponseStatus: attempt.status,
          lastError: attempt.error,
          ...(next.nextAttemptAt ? { nextAttemptAt: next.nextAttemptAt } : {}),
          ...(next.status === "pending" ? {} : { completedAt: attempt.at }),
        },
      });
      if (count === 0) return;
      await tx.webhookDeliveryAttempt.create({
        data: {
          organizationId: claimed.organization_id,
          deliveryId: claimed.id,
          attemptedAt: attempt.at,
          responseStatus: attempt.status,
          error: attempt.error,
          durationMs: attempt.durationMs,
        },
      });
    });
  }
}
