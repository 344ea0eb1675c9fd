import { randomUUID } from "node:crypto";
import request from "supertest";
import { providerIdOf, type TextModelProviders, type TextRequestView } from "@meter/contracts";
import { createLogger } from "@meter/service-kit";
import { signedCall, startFakeUpstream, testKeyEnv, type FakeUpstream, type TestAccount } from "@meter/testing";
import { compose } from "../src/composition";
import { loadConfig } from "../src/config";
import { PRICES, eventually, startTextStack, type TextStack } from "./support/text-stack";

/**
 * Several providers per public model (docs/api.md, "Several providers per model"): each test has its own
 * fake upstreams and its own model, so one test's cooldowns are not another's.
 */
const COOLDOWN_MS = 3_000;
const FAILURES_TO_OPEN = 2;

let s: TextStack;
const fakes: FakeUpstream[] = [];
beforeAll(async () => {
  s = await startTextStack({
    syncTimeoutMs: 3_000,
    upstreamTimeoutMs: 1_000,
    parkBaseMs: 100,
    env: { TEXT_PROVIDER_COOLDOWN_MS: String(COOLDOWN_MS), TEXT_PROVIDER_FAILURES_TO_OPEN: String(FAILURES_TO_OPEN) },
  });
  // Three services built in this process: slow to load on a busy machine.
}, 120_000);
afterAll(async () => {
  try {
    await eventually(async () => (await s.activeHolds()) === 0, 15_000, "every text hold resolved");
    await s.assertBooksBalance();
  } finally {
    await Promise.all(fakes.map((f) => f.close()));
    await s?.close();
  }
}, 60_000);

type Kind = "anthropic" | "openai-chat";
interface Upstream {
  fake: FakeUpstream;
  kind?: Kind;
  priority?: number;
  weight?: number;
  rpm?: number;
  tpm?: number;
}

/** A model of its own on fresh fake upstreams, `a` (Anthropic) then `b` (OpenAI Chat) unless told. */
async function routedModel(shape: { a?: Omit<Upstream, "fake">; b?: Omit<Upstream, "fake"> } = {}) {
  const a = await startFakeUpstream();
  const b = await startFakeUpstream();
  fakes.push(a, b);
  const entry = (u: Upstream, name: string) => ({
    kind: u.kind ?? (name === "a" ? "anthropic" : "openai-chat"),
    base_url: (u.kind ?? (name === "a" ? "anthropic" : "openai-chat")) === "anthropic" ? u.fake.anthropicBaseUrl : u.fake.openaiBaseUrl,
    upstream_model: `upstream-${name}`,
    api_key_env: "FAKE_UPSTREAM_API_KEY",
    ...(u.priority !== undefined ? { priority: u.priority } : {}),
    ...(u.weight !== undefined ? { weight: u.weight } : {}),
    ...(u.rpm !== undefined ? { rpm: u.rpm } : {}),
    ...(u.tpm !== undefined ? { tpm: u.tpm } : {}),
  });
  const model = `routed-${randomUUID().slice(0, 8)}`;
  const put = await s.admin("PUT", `/admin/v1/models/${model}`, {
    enabled: true,
    providers: [entry({ fake: a, priority: 0, ...shape.a }, "a"), entry({ fake: b, priority: 1, ...shape.b }, "b")],
    operations: { text: PRICES },
  });
  expect(put.status).toBe(200);
  await s.text.catalog.refresh();
  const [idA, idB] = (put.body.providers as Parameters<typeof providerIdOf>[0][]).map(providerIdOf) as [string, string];
  return { model, a, b, idA, idB };
}

const body = (model: string, text = "hello") => ({ model, max_tokens: 40, messages: [{ role: "user", content: text }] });
const idem = () => ({ "idempotency-key": randomUUID() });
const billingOf = (json: Record<string, unknown>) => json.billing as { estimated_cost_microrub: number; cost_microrub: number };

/** A second text process on the same databases and Redis: another replica behind the gateway (with `env`'s settings). */
async function secondReplica(env: Record<string, string> = {}) {
  const other = await compose(loadConfig({ ...s.stack.env, ...testKeyEnv("text"), ...env }), { logger: createLogger("text-2", "silent") });
  try {
    await other.catalog.refresh();
    return other;
  } catch (err) {
    await other.close();
    throw err;
  }
}

/** One request to `replica`, signed as the gateway signs it for `account`'s key: its status. */
async function replicaStatus(replica: Awaited<ReturnType<typeof compose>>, account: TestAccount, model: string): Promise<number> {
  const identity = { kind: "key" as const, key_id: account.keyId, user_id: account.userId, organization_id: account.organizationId, scopes: ["text" as const] };
  const { headers, payload } = signedCall("gateway", "text", identity, "POST", "/v1/messages", body(model));
  return (await request(replica.app).post("/v1/messages").set(headers).set(idem()).send(payload)).status;
}

async function callReplica(replica: Awaited<ReturnType<typeof compose>>, account: TestAccount, model: string): Promise<void> {
  // 202 only when this machine is too slow for the synchronous window; the work goes on.
  expect([200, 202]).toContain(await replicaStatus(replica, account, model));
}

/** The cost at the public tariff of the fake's answer to `text` (the fake counts ceil(bytes / 4) tokens). */
function publicCost(json: Record<string, unknown>): number {
  const usage = json.usage as { input_tokens: number; output_tokens: number };
  return Math.ceil((usage.input_tokens * PRICES.input_microrub_per_1k_tokens + usage.output_tokens * PRICES.output_microrub_per_1k_tokens) / 1000);
}

async function expectChargedOnce(account: TestAccount, json: Record<string, unknown>) {
  const cost = billingOf(json).cost_microrub;
  expect(cost).toBe(publicCost(json));
  expect(await s.settledBalance(account.organizationId)).toMatchObject({ balance_microrub: 1_000_000 - cost, reserved_microrub: 0 });
}

describe("failover when nothing ran", () => {
  it.each([
    ["a 500", (f: FakeUpstream) => Promise.resolve(f.configure({ status: 500 }))],
    ["a 429 with Retry-After", (f: FakeUpstream) => Promise.resolve(f.configure({ status: 429, retryAfterS: 30 }))],
    ["a 529 (overloaded)", (f: FakeUpstream) => Promise.resolve(f.configure({ status: 529 }))],
    ["a refused connection", (f: FakeUpstream) => f.refuseConnections(true)],
  ])("%s moves the request on to the next provider at once: answered, charged once at the public tariff", async (what, fail) => {
    const { model, a, b } = await routedModel();
    await fail(a);
    const account = await s.account();
    const res = await s.call(account.key, "/v1/messages", body(model), idem());
    expect(res.status).toBe(200);
    expect(res.json.model).toBe(model);
    expect(JSON.stringify(res.json)).not.toMatch(/upstream-|127\.0\.0\.1/);
    expect(b.callCount()).toBe(1);
    expect((b.calls[0]!.body as { model: string }).model).toBe("upstream-b");
    // Each provider at most once: no inline retries of the refusing one.
    expect(a.callCount()).toBe(what === "a refused connection" ? 0 : 1);
    await expectChargedOnce(account, res.json);
  });

  it("translates between kinds: /v1/responses on an Anthropic provider refusing, answered by an OpenAI Chat one", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ status: 503 });
    const account = await s.account();
    const res = await s.call(account.key, "/v1/responses", { model, input: "hi there", max_output_tokens: 40 }, idem());
    expect(res.status).toBe(200);
    expect(res.json.output_text ?? JSON.stringify(res.json.output)).toMatch(/Fake reply to: hi there/);
    expect(a.callCount()).toBe(1);
    expect(b.calls[0]!.path).toBe("/v1/chat/completions");
  });

  it("a request the upstream refuses as such (400) is not sent elsewhere: 502, nothing charged", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ status: 400 });
    const account = await s.account();
    const res = await s.call(account.key, "/v1/messages", body(model), idem());
    expect(res.status).toBe(502);
    expect(b.callCount()).toBe(0);
    expect(await s.settledBalance(account.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
  });

  it("every provider refusing is 502 upstream_error with the hold released, each asked once", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ status: 500 });
    await b.refuseConnections(true);
    const account = await s.account();
    const res = await s.call(account.key, "/v1/messages", body(model), idem());
    expect(res.status).toBe(502);
    expect((res.json.error as { code: string }).code).toBe("upstream_error");
    expect(JSON.stringify(res.json)).not.toMatch(/upstream-|127\.0\.0\.1/);
    expect(a.callCount()).toBe(1);
    expect(await s.settledBalance(account.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
    const row = await s.text.database.pool.query<{ provider: string; providers_refused: string[] }>(
      "SELECT provider, providers_refused FROM text_requests WHERE model = $1",
      [model],
    );
    expect(row.rows[0]!.providers_refused).toHaveLength(2);
  });
});

describe("an unknown outcome stays with its provider", () => {
  it("a connection dropped after sending is 202, the next provider is never called, and the same provider finishes it", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ drop: "before-response", failTimes: 1 });
    const account = await s.account();
    const headers = idem();
    const pending = await s.call(account.key, "/v1/messages", body(model, "lost"), headers);
    expect(pending.status).toBe(202);
    let final = pending;
    await eventually(async () => (final = await s.call(account.key, "/v1/messages", body(model, "lost"), headers)).status === 200, 15_000, "the retry");
    expect(a.callCount()).toBe(2);
    expect(b.callCount()).toBe(0);
    await expectChargedOnce(account, final.json);
  });

  it("a later attempt goes to the recorded provider only, even when it refuses then", async () => {
    const { model, a, b } = await routedModel();
    // The first call is lost; then the provider refuses: the request fails, the other is never asked.
    a.configure({ drop: "before-response", failTimes: 1 });
    const account = await s.account();
    const headers = idem();
    expect((await s.call(account.key, "/v1/messages", body(model, "lost"), headers)).status).toBe(202);
    a.configure({ drop: undefined, status: 500, failTimes: 100 });
    await eventually(async () => (await s.call(account.key, "/v1/messages", body(model, "lost"), headers)).status === 502, 15_000, "the failure");
    expect(b.callCount()).toBe(0);
    expect(await s.settledBalance(account.organizationId)).toMatchObject({ balance_microrub: 1_000_000, reserved_microrub: 0 });
  });
});

describe("health", () => {
  it("a provider failing every call is cooled down, not asked on every request, and tried again after its cooldown", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ status: 500 });
    const account = await s.account();
    for (let i = 0; i < 6; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
    // Opened after FAILURES_TO_OPEN failures; the others went straight to b.
    expect(a.callCount()).toBe(FAILURES_TO_OPEN);
    expect(b.callCount()).toBe(6);

    a.reset();
    await new Promise((r) => setTimeout(r, COOLDOWN_MS + 300));
    // One trial after the cooldown; it answers, so the provider is back in front.
    for (let i = 0; i < 3; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
    expect(a.callCount()).toBe(3);
    expect(b.callCount()).toBe(6);
  });

  it("a 429's Retry-After keeps the provider out that long, after one refusal", async () => {
    const { model, a, b } = await routedModel();
    a.configure({ status: 429, retryAfterS: 60, failTimes: 1 });
    const account = await s.account();
    for (let i = 0; i < 4; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
    expect(a.callCount()).toBe(1);
    expect(b.callCount()).toBe(4);
  });

  it("two text processes share one cooldown", async () => {
    const { model, a, b } = await routedModel();
    const other = await secondReplica();
    try {
      a.configure({ status: 500 });
      const account = await s.account();
      for (let i = 0; i < FAILURES_TO_OPEN; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
      expect(a.callCount()).toBe(FAILURES_TO_OPEN);

      for (let i = 0; i < 3; i++) await callReplica(other, account, model);
      await eventually(async () => b.callCount() === FAILURES_TO_OPEN + 3, 15_000, "the second process's requests");
      // The second process never asked the provider the first one cooled down.
      expect(a.callCount()).toBe(FAILURES_TO_OPEN);
    } finally {
      await other.close();
    }
  });
});

describe("load balancing", () => {
  it("a provider's rpm cap, counted for every text process together, sends the rest of the minute's requests on", async () => {
    // Within one clock minute (the cap's window).
    if (Date.now() % 60_000 > 45_000) await new Promise((r) => setTimeout(r, 60_500 - (Date.now() % 60_000)));
    const { model, a, b } = await routedModel({ a: { rpm: 3 } });
    const other = await secondReplica();
    try {
      const account = await s.account();
      for (let i = 0; i < 2; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
      for (let i = 0; i < 3; i++) await callReplica(other, account, model);
      await eventually(async () => a.callCount() + b.callCount() === 5, 15_000, "every request answered");
      expect(a.callCount()).toBe(3);
      expect(b.callCount()).toBe(2);
    } finally {
      await other.close();
    }
  }, 120_000);

  it("weights 3:1 among equal priorities give the first 0.6-0.9 of 400 requests", async () => {
    const { model, a, b } = await routedModel({ a: { priority: 0, weight: 3 }, b: { priority: 0, weight: 1 } });
    // A replica without this file's short timeouts: on a busy machine a slow answer would otherwise
    // become a 202 or a failover to the other provider, which moves the share this test measures.
    const replica = await secondReplica({ TEXT_SYNC_TIMEOUT_MS: "60000", UPSTREAM_TIMEOUT_MS: "60000" });
    try {
      const account = await s.account({ credit: 100_000_000 });
      const statuses: number[] = [];
      const queue = Array.from({ length: 400 }, (_, i) => i);
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (queue.shift() !== undefined) statuses.push(await replicaStatus(replica, account, model));
        }),
      );
      expect(statuses.filter((st) => st === 200)).toHaveLength(400);
      expect(a.callCount() + b.callCount()).toBe(400);
      const share = a.callCount() / 400;
      expect(share).toBeGreaterThanOrEqual(0.6);
      expect(share).toBeLessThanOrEqual(0.9);
    } finally {
      await replica.close();
    }
  }, 120_000);
});

describe("what the operator sees", () => {
  /** The text service's /metrics, the series of `name` whose labels include `labels`. */
  async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
    const text = (await request(s.text.app).get("/metrics")).text;
    const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
  }

  it("which provider served a request and which refused it, in the admin API; never in the key holder's answer", async () => {
    const { model, a, idA, idB } = await routedModel();
    a.configure({ status: 503 });
    const account = await s.account();
    const res = await s.call(account.key, "/v1/messages", body(model), idem());
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.json)).not.toContain(idA.split("/")[0]!);

    // By the public answer's id, as a client would quote it, and by the record id (a hold's owner_ref).
    const view = await s.admin("GET", `/admin/v1/text/requests/${String(res.json.id)}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      object: "text_request",
      model,
      status: "completed",
      served_by: idB,
      sent_to: idB,
      refused_by: [idA],
      providers: [idA, idB],
    });
    const byRecord = await s.admin("GET", `/admin/v1/text/requests/${(view.body as TextRequestView).id}`);
    expect(byRecord.body.served_by).toBe(idB);
    expect((await s.admin("GET", `/admin/v1/text/requests/${randomUUID()}`)).status).toBe(404);

    // The same paths with an API key: the admin door refuses it.
    const asKeyHolder = await fetch(`${s.url}/admin/v1/text/requests/${String(res.json.id)}`, { headers: { authorization: `Bearer ${account.key}` } });
    expect(asKeyHolder.status).toBe(401);
    expect(await asKeyHolder.text()).not.toContain(idB);
  });

  it("a model's providers with their breaker state, and /metrics: calls, failures, latency and state per provider", async () => {
    const { model, a, idA, idB } = await routedModel();
    a.configure({ status: 500 });
    const account = await s.account();
    for (let i = 0; i < FAILURES_TO_OPEN + 1; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);

    const list = await s.admin("GET", "/admin/v1/text/providers");
    const entry = (list.body.data as TextModelProviders[]).find((m) => m.model === model)!;
    expect(entry.providers.map((p) => [p.id, p.state, p.consecutive_failures])).toEqual([
      [idA, "open", FAILURES_TO_OPEN],
      [idB, "closed", 0],
    ]);
    expect(Date.parse(entry.providers[0]!.open_until!)).toBeGreaterThan(Date.now());
    // A model's only provider has no breaker.
    const single = (list.body.data as TextModelProviders[]).find((m) => m.providers.length === 1)!;
    expect(single.providers[0]!.state).toBeNull();

    expect(await metric("text_upstream_calls_total", { provider: idA, outcome: "failed" })).toBe(FAILURES_TO_OPEN);
    expect(await metric("text_upstream_failures_total", { provider: idA, kind: "failed" })).toBe(FAILURES_TO_OPEN);
    expect(await metric("text_upstream_calls_total", { provider: idB, outcome: "answered" })).toBe(FAILURES_TO_OPEN + 1);
    expect(await metric("text_upstream_failures_total", { provider: idB })).toBeUndefined();
    expect(await metric("text_upstream_seconds_count", { provider: idB })).toBe(FAILURES_TO_OPEN + 1);
    expect(await metric("text_provider_breaker_state", { provider: idA })).toBe(2);
    expect(await metric("text_provider_breaker_state", { provider: idB })).toBe(0);
  });

  it("a provider's tpm cap sends the minute's further requests on; the count is corrected to the usage", async () => {
    if (Date.now() % 60_000 > 45_000) await new Promise((r) => setTimeout(r, 60_500 - (Date.now() % 60_000)));
    const account = await s.account();
    // Room for exactly one request's estimate (input estimate + max_tokens) in the minute.
    const { model: probe } = await routedModel();
    const quote = await s.call(account.key, "/v1/chat/quote", body(probe));
    const estimate = (quote.json.input_tokens as number) + (quote.json.max_output_tokens as number);
    const { model, a, b, idA } = await routedModel({ a: { tpm: estimate } });

    const first = await s.call(account.key, "/v1/messages", body(model), idem());
    expect(first.status).toBe(200);
    const usage = first.json.usage as { input_tokens: number; output_tokens: number };
    expect(usage.input_tokens + usage.output_tokens).toBeLessThan(estimate);
    const tokensOfA = async () =>
      ((await s.admin("GET", "/admin/v1/text/providers")).body.data as TextModelProviders[]).find((m) => m.model === model)!.providers[0]!.minute_tokens;
    await eventually(async () => (await tokensOfA()) === usage.input_tokens + usage.output_tokens, 5_000, "the count corrected to the usage");

    // Its usage plus another estimate is over the cap: the rest of the minute goes to b, unasked of a.
    for (let i = 0; i < 3; i++) expect((await s.call(account.key, "/v1/messages", body(model), idem())).status).toBe(200);
    expect(a.callCount()).toBe(1);
    expect(b.callCount()).toBe(3);
    expect(await metric("text_upstream_calls_total", { provider: idA, outcome: "capped" })).toBe(3);
  });
});
