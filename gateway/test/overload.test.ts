import { Agent, request } from "undici";
import { DEFAULT_IN_FLIGHT } from "../src/config";
import { startGateway, type GatewayHarness } from "./support/gateway-harness";
import { HeldService } from "./support/held-service";

const BURST = 800;
// Each test starts its own billing database and sends two bursts of 800 requests: slower than most.
jest.setTimeout(120_000);
const dispatcher = new Agent({ connections: BURST + 100, keepAliveTimeout: 10_000 });

afterAll(async () => {
  await dispatcher.close();
});

interface Outcome {
  status: number;
  code?: string;
  retryAfter?: string;
}

function message(key: string, gatewayUrl: string, i: number): Promise<Outcome> {
  return request(`${gatewayUrl}/v1/messages`, {
    dispatcher,
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key, "idempotency-key": `burst-${i}` },
    body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
  }).then(async (res) => {
    const body = (await res.body.json()) as { error?: { code: string } };
    const retryAfter = res.headers["retry-after"];
    return { status: res.statusCode, code: body.error?.code, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined };
  });
}

/**
 * Fires the burst and opens the gate once every request is either held by the service or answered
 * (or, should some request be neither, after 45 s, so the outcomes below show what became of it).
 */
async function burst(g: GatewayHarness, service: HeldService, key: string): Promise<Outcome[]> {
  let settled = 0;
  const calls = Array.from({ length: BURST }, (_, i) =>
    message(key, g.url, i)
      .then(
        (outcome) => outcome,
        (err: unknown): Outcome => ({ status: 0, code: (err as { code?: string }).code ?? String(err) }),
      )
      .finally(() => {
        settled++;
      }),
  );
  const giveUpAt = Date.now() + 45_000;
  while (service.arrived.length + settled < BURST && Date.now() < giveUpAt) await new Promise((r) => setTimeout(r, 5));
  service.open();
  return Promise.all(calls);
}

function tally(outcomes: Outcome[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const o of outcomes) counts[o.status] = (counts[o.status] ?? 0) + 1;
  return counts;
}

async function stillServes(g: GatewayHarness, key: string): Promise<void> {
  const res = await request(`${g.url}/v1/models`, { dispatcher, headers: { authorization: `Bearer ${key}` } });
  await res.body.dump();
  expect(res.statusCode).toBe(200);
}

describe("a burst of concurrent requests from one key", () => {
  let service: HeldService;
  let g: GatewayHarness;

  beforeEach(async () => {
    service = new HeldService();
    await service.start();
  });
  afterEach(async () => {
    await service.stop();
    await g?.close();
  });

  it("is answered, every request, with the default limits: a few hundred served, the rest 429 with Retry-After", async () => {
    expect(DEFAULT_IN_FLIGHT.perKey).toBeGreaterThanOrEqual(300);
    g = await startGateway({ services: { text: service.url } });
    const { key } = await g.account({ scopes: ["text"] });
    const outcomes = await burst(g, service, key);
    expect(tally(outcomes)).toEqual({ 200: DEFAULT_IN_FLIGHT.perKey, 429: BURST - DEFAULT_IN_FLIGHT.perKey });
    for (const o of outcomes.filter((x) => x.status === 429))
      expect(o).toEqual({ status: 429, code: "rate_limited", retryAfter: expect.stringMatching(/^\d+$/) });
    await stillServes(g, key);
  });

  it("over the per-service bound is shed at once with 503 service_unavailable and Retry-After, never reaching the service", async () => {
    g = await startGateway({ services: { text: service.url }, serviceMaxInFlight: 100 });
    const { key } = await g.account({ scopes: ["text"] });
    const outcomes = await burst(g, service, key);
    const counts = tally(outcomes);
    expect(counts).toEqual({ 200: 100, 503: BURST - 100 });
    for (const o of outcomes.filter((x) => x.status === 503))
      expect(o).toEqual({ status: 503, code: "service_unavailable", retryAfter: expect.stringMatching(/^\d+$/) });
    await stillServes(g, key);
  });

  it("over the per-key bound is 429 rate_limited with Retry-After, never reaching the service", async () => {
    g = await startGateway({ services: { text: service.url }, keyMaxInFlight: 50 });
    const { key } = await g.account({ scopes: ["text"] });
    const outcomes = await burst(g, service, key);
    expect(tally(outcomes)).toEqual({ 200: 50, 429: BURST - 50 });
    await stillServes(g, key);
  });

  it("survives the retry storm after an outage of the service", async () => {
    g = await startGateway({ services: { text: service.url } });
    const { key } = await g.account({ scopes: ["text"] });
    const port = service.port;
    await service.stop();
    const during = await Promise.all(
      Array.from({ length: BURST }, (_, i) => message(key, g.url, i).catch((err: unknown): Outcome => ({ status: 0, code: String(err) }))),
    );
    // Refused connections answer fast, so how many are in flight at once (and hit the key's bound) varies.
    expect(during.filter((o) => o.status !== 503 && o.status !== 429)).toEqual([]);
    for (const o of during.filter((x) => x.status === 503))
      expect(o).toEqual({ status: 503, code: "service_unavailable", retryAfter: expect.stringMatching(/^\d+$/) });
    await stillServes(g, key);

    await service.start(port);
    // Each place comes back just after its answer is sent (a Redis call not waited for): the storm's last.
    const giveUpAt = Date.now() + 10_000;
    while ((await g.keyPlacesHeld()) > 0 && Date.now() < giveUpAt) await new Promise((r) => setTimeout(r, 20));
    const after = await burst(g, service, key);
    expect(tally(after)).toEqual({ 200: DEFAULT_IN_FLIGHT.perKey, 429: BURST - DEFAULT_IN_FLIGHT.perKey });
    await stillServes(g, key);
  });
});
