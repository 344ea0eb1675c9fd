import { setTimeout as sleep } from "node:timers/promises";
import { startGateway } from "./support/gateway-harness";

/** The limit is a window per minute: start a test's requests early in one, so they all fall in it. */
async function earlyInAMinute(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await sleep(left + 100);
}

/** Two gateways and billing start, and a test may wait up to 15 s for a fresh minute. */
const TEST_TIMEOUT_MS = 120_000;

async function outcome(url: string, key: string): Promise<{ status: number; code?: string; retryAfter: number | null }> {
  const res = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { error?: { code: string } };
  const retryAfter = res.headers.get("retry-after");
  return { status: res.status, ...(body.error ? { code: body.error.code } : {}), retryAfter: retryAfter === null ? null : Number(retryAfter) };
}

describe("RATE_LIMIT_PER_MINUTE across gateway replicas (docs/api.md, Limits and overload)", () => {
  it(
    "is one limit for a key whichever replica its requests reach",
    async () => {
      const g = await startGateway({ replicas: 2, rateLimitPerMinute: 3 });
      try {
        const { key } = await g.account({ scopes: ["text"] });
        await earlyInAMinute();
        const results = [];
        for (let i = 0; i < 8; i++) results.push(await outcome(g.urls[i % 2]!, key));
        expect(results.filter((r) => r.status === 200)).toHaveLength(3);
        const refused = results.filter((r) => r.status !== 200);
        expect(refused).toHaveLength(5);
        for (const r of refused) {
          expect(r).toEqual({ status: 429, code: "rate_limited", retryAfter: expect.any(Number) });
          expect(r.retryAfter).toBeGreaterThanOrEqual(1);
          expect(r.retryAfter).toBeLessThanOrEqual(60);
        }
        // Another key has its own limit.
        const other = await g.account({ scopes: ["text"] });
        expect((await outcome(g.urls[1]!, other.key)).status).toBe(200);
      } finally {
        await g.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "falls back to each replica's own count while Redis is unreachable, and says so in /metrics",
    async () => {
      const g = await startGateway({ replicas: 2, rateLimitPerMinute: 2, gatewayEnv: { REDIS_URL: "redis://127.0.0.1:1" } });
      try {
        const { key } = await g.account({ scopes: ["text"] });
        await earlyInAMinute();
        for (const url of g.urls) {
          expect((await outcome(url, key)).status).toBe(200);
          expect((await outcome(url, key)).status).toBe(200);
          expect(await outcome(url, key)).toMatchObject({ status: 429, code: "rate_limited" });
        }
        const metrics = await (await fetch(`${g.internalUrl}/metrics`)).text();
        expect(metrics).toMatch(/^gateway_rate_limit_fallback_total\{[^}]*\} 3$/m);
      } finally {
        await g.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});
