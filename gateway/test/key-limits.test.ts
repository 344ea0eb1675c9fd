import { setTimeout as sleep } from "node:timers/promises";
import { waitFor } from "@meter/testing";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";
import { HeldService } from "./support/held-service";
import { startTlsRedis } from "./support/tls-redis";

/**
 * A key's limits across gateway replicas (docs/api.md, "Limits and overload"): its requests in flight
 * and per minute are counted in Redis, so two replicas hold it to one bound together; a replica that
 * dies frees its places within a lease; the minute is a sliding window; and while Redis is unreachable
 * each replica counts on its own. Real gateways (their composition roots) in front of real billing; a
 * stand-in text service holds the admitted requests until the test lets them go.
 */
jest.setTimeout(120_000);

interface Outcome {
  status: number;
  code?: string;
  retryAfter?: string;
}

function message(url: string, key: string, i: number): Promise<Outcome> {
  return fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key, "idempotency-key": `limits-${i}` },
    body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
  }).then(async (res) => {
    const body = (await res.json()) as { error?: { code: string } };
    const retryAfter = res.headers.get("retry-after");
    return { status: res.status, ...(body.error ? { code: body.error.code } : {}), ...(retryAfter !== null ? { retryAfter } : {}) };
  });
}

/** What a request that should be refused at once got: its outcome, or "held" when it reached the service instead. */
function atOnce(outcome: Promise<Outcome>, ms = 5000): Promise<Outcome | "held"> {
  return Promise.race([outcome, sleep(ms).then(() => "held" as const)]);
}

async function metric(internalUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${internalUrl}/metrics`)).text();
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, "m").exec(text)?.[1] ?? "0");
}

const refusedAtOnce = { status: 429, code: "rate_limited", retryAfter: "1" };

let held: HeldService;
let g: GatewayHarness | undefined;
beforeEach(async () => {
  held = new HeldService();
  await held.start();
});
afterEach(async () => {
  await g?.close();
  g = undefined;
  await held.stop();
});

describe("a key's requests in flight", () => {
  it("are one bound across two replicas: N in flight over both, the next refused at once on either, never reaching the service", async () => {
    g = await startGateway({ replicas: 2, keyMaxInFlight: 4, services: { text: held.url } });
    const { key } = await g.account({ scopes: ["text"] });
    const admitted = Array.from({ length: 4 }, (_, i) => message(g!.urls[i % 2]!, key, i));
    await waitFor(() => Promise.resolve(held.arrived.length === 4), "the 4 admitted requests at the service");

    expect(await Promise.all([atOnce(message(g.urls[0]!, key, 10)), atOnce(message(g.urls[1]!, key, 11))])).toEqual([refusedAtOnce, refusedAtOnce]);
    expect(held.arrived).toHaveLength(4);
    // Another key has places of its own.
    const other = await g.account({ scopes: ["text"] });
    const otherCall = message(g.urls[1]!, other.key, 12);
    await waitFor(() => Promise.resolve(held.arrived.length === 5), "the other key's request at the service");

    held.open();
    expect((await Promise.all([...admitted, otherCall])).map((o) => o.status)).toEqual([200, 200, 200, 200, 200]);
    // The places were given back when the answers were over.
    expect((await message(g.urls[0]!, key, 13)).status).toBe(200);
    expect(await metric(g.internalUrls[0]!, "gateway_key_limits_fallback_total")).toBe(0);
  });

  it("held by a replica that dies are freed within the lease, not kept for ever", async () => {
    const leaseMs = 3000;
    g = await startGateway({ keyMaxInFlight: 2, keyInFlightLeaseMs: leaseMs, services: { text: held.url } });
    const { key } = await g.account({ scopes: ["text"] });
    const doomed = await g.startProcess();
    const cut = [message(doomed.url, key, 0), message(doomed.url, key, 1)].map((p) => p.catch(() => "cut"));
    await waitFor(() => Promise.resolve(held.arrived.length === 2), "the doomed replica's requests at the service");
    expect(await atOnce(message(g.url, key, 2))).toEqual(refusedAtOnce);
    // While it lives it renews its places: still counted after more than a lease.
    await sleep(leaseMs + 1000);
    expect(await atOnce(message(g.url, key, 5))).toEqual(refusedAtOnce);

    await doomed.kill();
    await Promise.all(cut);
    const killedAt = Date.now();
    // Its places are still counted right after it died (a dead process releases nothing)...
    expect(await atOnce(message(g.url, key, 3))).toEqual(refusedAtOnce);
    held.open();
    // ...and free once their lease has run out, renewed by nobody.
    await waitFor(async () => (await message(g!.url, key, 4)).status === 200, "a place freed by the lease", leaseMs + 5000);
    expect(Date.now() - killedAt).toBeLessThan(leaseMs + 2000);
  });
});

describe("a key's requests per minute", () => {
  it("are one sliding window across replicas: no fresh count when a new minute starts", async () => {
    g = await startGateway({ replicas: 2, rateLimitPerMinute: 3, services: { text: held.url } });
    held.open();
    const { key } = await g.account({ scopes: ["text"] });
    // Three requests late in a minute, from both replicas...
    const second = () => new Date().getSeconds();
    if (second() < 50 || second() > 54) await sleep(((50 - second() + 60) % 60) * 1000);
    const sentAt = Date.now();
    for (let i = 0; i < 3; i++) expect((await message(g.urls[i % 2]!, key, i)).status).toBe(200);
    expect(await message(g.urls[1]!, key, 3)).toEqual({ status: 429, code: "rate_limited", retryAfter: expect.stringMatching(/^\d+$/) });

    // ...still count after the clock's minute turned: the window is the last 60 s, not this minute.
    await sleep(Math.max(0, 60_000 - (sentAt % 60_000)) + 2000);
    const after = await message(g.urls[0]!, key, 4);
    expect(after).toMatchObject({ status: 429, code: "rate_limited" });
    // It names when the oldest of the three leaves the window.
    const expected = (sentAt + 60_000 - Date.now()) / 1000;
    expect(Number(after.retryAfter)).toBeGreaterThanOrEqual(Math.floor(expected) - 1);
    expect(Number(after.retryAfter)).toBeLessThanOrEqual(Math.ceil(expected) + 1);
    // Another key has a window of its own.
    const other = await g.account({ scopes: ["text"] });
    expect((await message(g.urls[1]!, other.key, 5)).status).toBe(200);
  });
});

describe("while Redis is unreachable", () => {
  it("each replica counts a key's requests in flight and per minute on its own, and says so in /metrics", async () => {
    g = await startGateway({
      replicas: 2,
      keyMaxInFlight: 2,
      rateLimitPerMinute: 3,
      services: { text: held.url },
      gatewayEnv: { REDIS_URL: "redis://127.0.0.1:1" },
    });
    const { key } = await g.account({ scopes: ["text"] });
    const admitted = [0, 1, 2, 3].map((i) => message(g!.urls[i % 2]!, key, i));
    await waitFor(() => Promise.resolve(held.arrived.length === 4), "2 requests in flight on each replica");
    for (const url of g.urls) expect(await atOnce(message(url, key, 10))).toEqual(refusedAtOnce);
    held.open();
    expect((await Promise.all(admitted)).map((o) => o.status)).toEqual([200, 200, 200, 200]);
    // Per minute, also per replica: each admitted 2 above, and takes one more.
    for (const url of g.urls) {
      expect((await message(url, key, 20)).status).toBe(200);
      expect(await message(url, key, 21)).toMatchObject({ status: 429, code: "rate_limited" });
    }
    // Decided alone: the two held, the third that passed its in-flight bound, and the one over its rate.
    for (const internal of g.internalUrls) expect(await metric(internal, "gateway_key_limits_fallback_total")).toBe(4);
  });
});

describe("over TLS with a password (rediss://, as in production)", () => {
  it("the replicas share a key's in-flight bound", async () => {
    const redis = await startTlsRedis("s3cret-redis-password");
    try {
      g = await startGateway({
        replicas: 2,
        keyMaxInFlight: 2,
        services: { text: held.url },
        gatewayEnv: { REDIS_URL: redis.url, REDIS_TLS_CA_FILE: redis.caFile },
      });
      const { key } = await g.account({ scopes: ["text"] });
      const admitted = [message(g.urls[0]!, key, 0), message(g.urls[1]!, key, 1)];
      await waitFor(() => Promise.resolve(held.arrived.length === 2), "the 2 admitted requests at the service");
      expect(await atOnce(message(g.urls[0]!, key, 2))).toEqual(refusedAtOnce);
      held.open();
      expect((await Promise.all(admitted)).map((o) => o.status)).toEqual([200, 200]);
      for (const internal of g.internalUrls) expect(await metric(internal, "gateway_key_limits_fallback_total")).toBe(0);
    } finally {
      await g?.close();
      g = undefined;
      await redis.stop();
    }
  });
});
