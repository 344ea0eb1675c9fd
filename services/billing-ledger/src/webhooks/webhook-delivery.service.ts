import type { Logger } from "@meter/service-kit";
import type { Counter } from "prom-client";
import type { ClaimedDelivery, WebhookRepository } from "./webhook.repository";
import type { WebhookSender } from "./webhook-sender.adapter";
import { signWebhook } from "./webhook-signature";

export interface RetryPolicy {
  /** WEBHOOK_RETRY_BASE_MS: the wait after the first failed attempt, doubled after each next one. */
  baseMs: number;
  /** WEBHOOK_RETRY_MAX_DELAY_MS. */
  maxDelayMs: number;
  /** WEBHOOK_RETRY_WINDOW_HOURS, in ms: no attempt starts later than this after the event. */
  windowMs: number;
}

/** The state after a failed attempt number `attempts`: the next try, or failed once past the window. */
export function afterFailure(attempts: number, createdAt: Date, now: Date, retry: RetryPolicy): { status: "pending" | "failed"; nextAttemptAt: Date | null } {
  const delay = Math.min(retry.baseMs * 2 ** Math.min(attempts - 1, 40), retry.maxDelayMs);
  const next = new Date(now.getTime() + delay);
  return next.getTime() > createdAt.getTime() + retry.windowMs ? { status: "failed", nextAttemptAt: null } : { status: "pending", nextAttemptAt: next };
}

const BATCH = 16;

/**
 * The webhook worker, off the request path: every poll it claims the deliveries that are due, signs
 * and sends each (Standard Webhooks headers),
 * and records the attempt: succeeded on a 2xx, else retried with exponential backoff until the retry
 * window ends (failed). Any number of billing-ledger replicas run it; claims never overlap.
 */
export class WebhookDeliveryService {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly rows: WebhookRepository,
    private readonly sender: WebhookSender,
    private readonly opts: { retry: RetryPolicy; timeoutMs: number; pollMs: number },
    private readonly logger: Logger,
    private readonly attempts: Counter<"outcome">,
  ) {}

  start(): this {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.runOnce()
        .catch((err: unknown) => this.logger.warn({ err }, "webhook delivery pass failed"))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: batches of due deliveries until none is left. */
  async runOnce(): Promise<void> {
    for (;;) {
      const claimed = await this.rows.claim(BATCH, this.opts.timeoutMs * 2 + 5_000);
      await Promise.all(claimed.map((d) => this.attempt(d)));
      if (claimed.length < BATCH || this.stopped) return;
    }
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const timestampS = Math.floor(Date.now() / 1000);
    const at = new Date();
    const result = await this.sender.send(
      d.url,
      { "webhook-id": d.event_id, "webhook-timestamp": String(timestampS), "webhook-signature": signWebhook(d.secret, d.event_id, timestampS, d.body) },
      d.body,
    );
    const attempts = d.attempts + 1;
    const next = result.ok ? { status: "succeeded" as const, nextAttemptAt: null } : afterFailure(attempts, d.created_at, new Date(), this.opts.retry);
    this.attempts.inc({ outcome: result.ok ? "succeeded" : next.status === "failed" ? "failed" : "retrying" });
    await this.rows.record(d, { at, status: result.status ?? null, error: result.error ?? null, durationMs: result.durationMs }, next);
  }
}
