import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import type { Logger, Metrics } from "@meter/service-kit";
import { LocalKeyLimits, RATE_WINDOW_MS, refusal, type KeyAdmission, type KeyLimitSettings, type KeyLimits } from "./key-limits";

/**
 * Admits one request of a key, on Redis's clock (one for every replica), in one step: the per-minute
 * rate as a log of the times of the key's admitted requests (at most the limit, none older than the
 * window: a sliding window, no reset at the minute), then the in-flight places as leased slots, each
 * expiring at its lease unless its gateway renews it. A refused request leaves nothing behind.
 * KEYS: the key's slots, the key's rate log. ARGV: max in flight, lease ms, slot id, per minute (0: off), window ms.
 */
const ADMIT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max, lease, slot = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local limit, window = tonumber(ARGV[4]), tonumber(ARGV[5])
if limit > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  if redis.call('ZCARD', KEYS[2]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {'rate', tonumber(oldest[2]) + window - now}
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= max then
  return {'in_flight', 0}
end
redis.call('ZADD', KEYS[1], now + lease, slot)
redis.call('PEXPIRE', KEYS[1], lease)
if limit > 0 then
  redis.call('ZADD', KEYS[2], now, slot)
  redis.call('PEXPIRE', KEYS[2], window)
end
return {'ok', 0}
`;

/**
 * Extends the leases of a key's slots that are still held (a slot already expired stays freed).
 * KEYS: the key's slots. ARGV: lease ms, then the slot ids.
 */
const RENEW_SCRIPT = `
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0
`;

/** The scripts, as ioredis's defineCommand adds them to the client and to its pipelines. */
interface LimitCommands {
  meterAdmitKey(slots: string, rate: string, max: number, leaseMs: number, slot: string, perMinute: number, windowMs: number): Promise<[string, number]>;
  pipeline(): ReturnType<Redis["pipeline"]> & { meterRenewSlots(slots: string, leaseMs: number, ...slotIds: string[]): unknown };
}

/** A request waits no longer than this for Redis before the process's own count decides. */
const COMMAND_TIMEOUT_MS = 250;
/** How long start-up waits for a first connection before serving on the process's own count. */
const CONNECT_WAIT_MS = 2000;

export interface RedisKeyLimitsOptions extends KeyLimitSettings {
  url: string;
  /** PEM of the CA that signed the server's certificate (rediss:// to a private CA). */
  caFile?: string | undefined;
  prefix: string;
  /** How long a slot lives unless renewed: a gateway that dies frees its places within it. */
  leaseMs: number;
  logger: Logger;
  metrics: Metrics;
}

/**
 * KEY_MAX_IN_FLIGHT and RATE_LIMIT_PER_MINUTE counted in Redis, shared by every gateway replica
 * (docs/api.md, "Limits and overload"): one script call to admit, one command to release. Each process
 * also keeps its own count, a floor that always holds, and decides on it alone while Redis is
 * unreachable (logged once per outage, counted in gateway_key_limits_fallback_total). A slot is leased:
 * this process renews the leases of its requests still in flight every third of a lease, so a gateway
 * that dies (or loses Redis) frees its slots within one lease.
 */
export class RedisKeyLimits implements KeyLimits {
  private readonly local: LocalKeyLimits;
  private readonly fallback;
  /** This process's slots in flight, by the Redis key of their key's slots. */
  private readonly held = new Map<string, Set<string>>();
  private readonly processId = randomBytes(6).toString("hex");
  private sequence = 0;
  private failing = false;
  private readonly renewal: NodeJS.Timeout;
  readonly maxInFlight: number;

  private constructor(
    private readonly redis: Redis & LimitCommands,
    private readonly opts: RedisKeyLimitsOptions,
  ) {
    this.local = new LocalKeyLimits(opts);
    this.maxInFlight = opts.maxInFlight;
    this.fallback = opts.metrics.counter(
      "gateway_key_limits_fallback_total",
      "Requests whose key limits (in flight, per minute) were decided by this process alone because Redis was unreachable",
    );
    this.renewal = setInterval(() => void this.renew(), Math.max(100, Math.floor(opts.leaseMs / 3)));
    this.renewal.unref();
  }

  static async connect(opts: RedisKeyLimitsOptions): Promise<RedisKeyLimits> {
    // No offline queue: while disconnected a command fails at once and the request is decided locally.
    const redis = new Redis(opts.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      ...(opts.caFile ? { tls: { ca: readFileSync(opts.caFile) } } : {}),
    });
    redis.defineCommand("meterAdmitKey", { numberOfKeys: 2, lua: ADMIT_SCRIPT });
    redis.defineCommand("meterRenewSlots", { numberOfKeys: 1, lua: RENEW_SCRIPT });
    const limits = new RedisKeyLimits(redis as Redis & LimitCommands, opts);
    // ioredis reconnects by itself; without a listener its 'error' events would be unhandled.
    redis.on("error", (e: Error) => limits.down(e));
    redis.on("ready", () => limits.up());
    // A Redis that is down is no reason not to serve: its errors are heard above, the wait just ends.
    await Promise.race([new Promise((resolve) => redis.once("ready", resolve)), sleep(CONNECT_WAIT_MS)]);
    return limits;
  }

  async admit(keyId: string): Promise<KeyAdmission> {
    const releaseLocal = this.local.inFlight.tryAcquire(keyId);
    if (!releaseLocal) return refusal("in_flight", 0);
    const slots = `${this.opts.prefix}{${keyId}}:in-flight`;
    const slot = `${this.processId}:${(this.sequence++).toString(36)}`;
    let verdict: [string, number];
    try {
      verdict = await this.redis.meterAdmitKey(
        slots,
        `${this.opts.prefix}{${keyId}}:rate`,
        this.opts.maxInFlight,
        this.opts.leaseMs,
        slot,
        this.opts.perMinute,
        RATE_WINDOW_MS,
      );
      this.up();
    } catch (e) {
      this.down(e as Error);
      this.fallback.inc();
      const wait = this.local.rate?.take(keyId) ?? 0;
      if (wait > 0) {
        releaseLocal();
        return refusal("rate", wait);
      }
      return { admitted: true, release: releaseLocal };
    }
    const [outcome, retryAfterMs] = verdict;
    if (outcome !== "ok") {
      releaseLocal();
      return refusal(outcome === "rate" ? "rate" : "in_flight", retryAfterMs);
    }
    this.local.rate?.record(keyId);
    this.hold(slots, slot);
    let released = false;
    return {
      admitted: true,
      release: () => {
        if (released) return;
        released = true;
        releaseLocal();
        this.held.get(slots)?.delete(slot);
        if (this.held.get(slots)?.size === 0) this.held.delete(slots);
        // Off the answer's path; should it fail, the slot's lease frees it.
        this.redis.zrem(slots, slot).catch((e: unknown) => this.down(e as Error));
      },
    };
  }

  close(): void {
    clearInterval(this.renewal);
    this.redis.disconnect();
  }

  private hold(slots: string, slot: string): void {
    let set = this.held.get(slots);
    if (!set) {
      set = new Set();
      this.held.set(slots, set);
    }
    set.add(slot);
  }

  /** One round trip for every slot this process holds; a failure leaves the leases to run out. */
  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const pipeline = this.redis.pipeline();
    for (const [slots, set] of this.held)
      (pipeline as unknown as { meterRenewSlots(...args: unknown[]): void }).meterRenewSlots(slots, this.opts.leaseMs, ...set);
    try {
      await pipeline.exec();
    } catch (e) {
      this.down(e as Error);
    }
  }

  private down(e: Error): void {
    if (this.failing) return;
    this.failing = true;
    this.opts.logger.warn({ err: e.message }, "Redis is unreachable: each key's limits are counted per gateway process until it is back");
  }

  private up(): void {
    if (!this.failing) return;
    this.failing = false;
    this.opts.logger.info("Redis is back: each key's limits are shared by every gateway process again");
  }
}
