import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import type { Logger, Metrics } from "@meter/service-kit";
import { RateLimiter, type KeyRateLimit } from "./rate-limiter";

/**
 * Counts one request of a key in the current minute and answers {count, ms left in the minute}. The
 * minute is Redis's (one clock for every replica); the counter expires at its end, so the next minute
 * starts from zero. One script, so INCR and its expiry are never separated.
 */
const TAKE_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('PEXPIREAT', KEYS[1], now - now % 60000 + 60000)
end
return {n, redis.call('PTTL', KEYS[1])}
`;

/** A request waits no longer than this for Redis before the process's own count decides. */
const COMMAND_TIMEOUT_MS = 250;
/** How long start-up waits for a first connection before serving on the process's own count. */
const CONNECT_WAIT_MS = 2000;

/**
 * RATE_LIMIT_PER_MINUTE counted in Redis, shared by every gateway replica (docs/api.md, "Limits and
 * overload"). Fails open to the per-process limit: while Redis is unreachable each replica admits up
 * to the limit on its own, logged once per outage and counted in gateway_rate_limit_fallback_total.
 */
export class SharedRateLimiter implements KeyRateLimit {
  readonly enabled = true;
  private readonly local: RateLimiter;
  private readonly fallback;
  private failing = false;

  private constructor(
    private readonly redis: Redis,
    private readonly perMinute: number,
    private readonly prefix: string,
    private readonly logger: Logger,
    metrics: Metrics,
  ) {
    this.local = new RateLimiter(perMinute);
    this.fallback = metrics.counter(
      "gateway_rate_limit_fallback_total",
      "Requests whose per-minute limit was decided by this process alone because Redis was unreachable",
    );
  }

  static async connect(opts: { url: string; perMinute: number; prefix: string; logger: Logger; metrics: Metrics }): Promise<SharedRateLimiter> {
    // No offline queue: while disconnected a command fails at once and the request is decided locally.
    const redis = new Redis(opts.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: COMMAND_TIMEOUT_MS });
    const limiter = new SharedRateLimiter(redis, opts.perMinute, opts.prefix, opts.logger, opts.metrics);
    // ioredis reconnects by itself; without a listener its 'error' events would be unhandled.
    redis.on("error", (e: Error) => limiter.down(e));
    redis.on("ready", () => limiter.up());
    // A Redis that is down is no reason not to serve: its errors are heard above, the wait just ends.
    await Promise.race([new Promise((resolve) => redis.once("ready", resolve)), sleep(CONNECT_WAIT_MS)]);
    return limiter;
  }

  async take(keyId: string): Promise<number> {
    try {
      const [count, msLeft] = (await this.redis.eval(TAKE_SCRIPT, 1, `${this.prefix}rate:${keyId}`)) as [number, number];
      this.up();
      return count <= this.perMinute ? 0 : Math.max(1, Math.ceil(msLeft / 1000));
    } catch (e) {
      this.down(e as Error);
      this.fallback.inc();
      return this.local.take(keyId);
    }
  }

  close(): void {
    this.redis.disconnect();
  }

  private down(e: Error): void {
    if (this.failing) return;
    this.failing = true;
    this.logger.warn({ err: e.message }, "Redis is unreachable: the per-key rate limit is counted per gateway process until it is back");
  }

  private up(): void {
    if (!this.failing) return;
    this.failing = false;
    this.logger.info("Redis is back: the per-key rate limit is shared by every gateway process again");
  }
}
