import { REFUSAL_ENTRIES_PER_KEY_HOUR, type ErrorCode, type LoggedRefusalStatus, type RefusalRecord } from "@meter/contracts";
import type { Logger, Metrics } from "@meter/service-kit";

/** One refusal of an authenticated key's request, as the gateway answered it. */
export interface Refusal {
  keyId: string;
  /** The route, OpenAPI style: `/v1/messages`, `/v1/files/{file_id}`. */
  endpoint: string;
  model: string | null;
  status: LoggedRefusalStatus;
  code: ErrorCode;
  message: string;
  requestId: string | null;
  at: Date;
}

export interface RefusalRecorderOptions {
  /** Sends one batch to billing-ledger (`POST /internal/v1/request-log/refusals`); throws when it was not taken. */
  send(refusals: RefusalRecord[]): Promise<void>;
  /** REFUSAL_LOG_FLUSH_MS: how long a refusal waits in memory at most (billing answering). */
  flushMs: number;
  /** REFUSAL_LOG_BUFFER: groups of identical refusals kept in memory at most; past it new ones are dropped and counted. */
  maxGroups: number;
  logger: Logger;
  metrics: Metrics;
}

/** Records one batch carries at most (the endpoint's own limit). */
const BATCH = 500;

const groupOf = (r: { keyId: string; endpoint: string; status: number; code: string; model: string | null }) =>
  `${r.keyId}\u0000${r.endpoint}\u0000${r.status}\u0000${r.code}\u0000${r.model ?? ""}`;

/**
 * The request log's refusals, off the request path (docs/api.md "Request log"): a refusal costs a map
 * update in memory; identical ones (key, endpoint, status, code, model) are counted together, and every
 * REFUSAL_LOG_FLUSH_MS the groups go to billing-ledger in batches. Memory is bounded twice: a key keeps
 * at most as many groups of its own as billing itemizes for it in an hour (the rest are counted by
 * status and code, model left out, as billing does), and all keys together at most `maxGroups`.
 * While billing is unreachable the groups wait, collapsing further; what does not fit is dropped and
 * counted in `gateway_refusals_dropped_total` (a refusal was answered all the same: only its entry is lost).
 */
export class RefusalRecorder {
  private groups = new Map<string, RefusalRecord>();
  private perKey = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failing = false;
  private readonly recorded;
  private readonly dropped;

  constructor(private readonly opts: RefusalRecorderOptions) {
    this.recorded = opts.metrics.counter("gateway_refusals_total", "Refusals of authenticated keys recorded for the request log, by status", ["status"]);
    this.dropped = opts.metrics.counter(
      "gateway_refusals_dropped_total",
      "Refusals whose request log entry was dropped: buffer_full (too many different ones waiting), not_sent (billing-ledger did not take them and the buffer was full)",
      ["reason"],
    );
  }

  record(r: Refusal): void {
    this.recorded.inc({ status: String(r.status) });
    const at = r.at.toISOString();
    this.add({
      key_id: r.keyId,
      endpoint: r.endpoint,
      model: r.model,
      status: r.status,
      code: r.code as RefusalRecord["code"],
      message: r.message,
      count: 1,
      first_at: at,
      last_at: at,
      request_id: r.requestId,
    });
  }

  /** Sends every group waiting now, in batches; a batch billing does not take waits for the next flush. */
  flush(): Promise<void> {
    this.flushing ??= this.sendAll().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  start(): this {
    this.timer = setInterval(() => void this.flush(), this.opts.flushMs);
    this.timer.unref();
    return this;
  }

  /** Stops the timer and sends what waits, once. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  private async sendAll(): Promise<void> {
    if (this.groups.size === 0) return;
    const waiting = [...this.groups.values()];
    this.groups = new Map();
    this.perKey = new Map();
    for (let i = 0; i < waiting.length; i += BATCH) {
      const batch = waiting.slice(i, i + BATCH);
      try {
        await this.opts.send(batch);
        if (this.failing) this.opts.logger.warn("refusals reach billing-ledger again");
        this.failing = false;
      } catch (err) {
        if (!this.failing) this.opts.logger.warn({ err }, "could not send refusals to billing-ledger; keeping them for the next try");
        this.failing = true;
        for (const r of waiting.slice(i)) this.add(r, "not_sent");
        return;
      }
    }
  }

  /** Counts `r` into its group, or its key's status-and-code group past the key's bound, or drops it when memory is full. */
  private add(r: RefusalRecord, whenFull: "buffer_full" | "not_sent" = "buffer_full"): void {
    let id = groupOf({ keyId: r.key_id, ...r });
    let group = this.groups.get(id);
    if (!group && r.model !== null && (this.perKey.get(r.key_id) ?? 0) >= REFUSAL_ENTRIES_PER_KEY_HOUR) {
      r = { ...r, model: null };
      id = groupOf({ keyId: r.key_id, ...r, endpoint: "*" });
      group = this.groups.get(id);
    }
    if (group) {
      group.count = Math.min(group.count + r.count, 2_147_483_647);
      if (r.first_at < group.first_at) group.first_at = r.first_at;
      if (r.last_at >= group.last_at) {
        group.last_at = r.last_at;
        group.message = r.message;
        group.request_id = r.request_id ?? group.request_id;
      }
      return;
    }
    if (this.groups.size >= this.opts.maxGroups) {
      this.dropped.inc({ reason: whenFull }, r.count);
      return;
    }
    this.groups.set(id, { ...r });
    if (r.model !== null) this.perKey.set(r.key_id, (this.perKey.get(r.key_id) ?? 0) + 1);
  }
}
