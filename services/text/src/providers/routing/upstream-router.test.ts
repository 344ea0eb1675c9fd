import { providerIdOf, type Provider, type RoutedProvider } from "@meter/contracts";
import { createLogger } from "@meter/service-kit";
import type { TextPlan } from "../../domain/text-record";
import { UpstreamError, type ProviderResult } from "../provider";
import { UpstreamRouter, type ProviderHealth } from "./upstream-router";

const logger = createLogger("router-test", "silent");
const answer: ProviderResult = { text: "ok", stopReason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } };

const p = (name: string, extra: Partial<RoutedProvider> = {}): RoutedProvider => ({
  kind: "openai-chat",
  base_url: `http://${name}.example/v1`,
  upstream_model: name,
  ...extra,
});

function planOf(providers: RoutedProvider[]): TextPlan {
  return {
    endpoint: "messages",
    model: "public",
    provider: providers[0]!,
    ...(providers.length > 1 ? { providers } : {}),
    tariff: { input_microrub_per_1k_tokens: 1, output_microrub_per_1k_tokens: 1 },
    request: { model: "public", messages: [{ role: "user", text: "hi" }], maxTokens: 10 },
    inputTokensEstimate: 1,
    estimatedCost: 1,
  };
}

/** Providers answering as `behaviour` says, by upstream model; records the calls and their model. */
function upstreams(behaviour: Record<string, () => ProviderResult>) {
  const calls: string[] = [];
  const providerFor = (provider: Provider) => ({
    complete: (request: { model: string }) => {
      calls.push(request.model);
      try {
        return Promise.resolve(behaviour[provider.upstream_model!]!());
      } catch (e) {
        return Promise.reject(e as Error);
      }
    },
  });
  return { calls, providerFor };
}

const ok = () => answer;
const refuse = (status: number) => () => {
  throw new UpstreamError(status === 400 ? "rejected" : "failed", `answered ${status}`, status);
};
const lost = () => {
  throw new UpstreamError("unknown", "no answer");
};
const pinAll = () => Promise.resolve(true);

describe("UpstreamRouter", () => {
  it("tries by priority and moves on only while nothing ran", async () => {
    const u = upstreams({ a: refuse(503), b: refuse(429), c: ok });
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [0, 0], logger });
    const pins: string[] = [];
    const sent = await router.send(planOf([p("c", { priority: 2 }), p("a"), p("b", { priority: 1 })]), null, {
      timeoutMs: 1000,
      pin: (id) => Promise.resolve(pins.push(id) > 0),
    });
    expect(u.calls).toEqual(["a", "b", "c"]);
    expect(sent).toMatchObject({ kind: "answered", provider: providerIdOf(p("c")), refused: [providerIdOf(p("a")), providerIdOf(p("b"))] });
    // Recorded before each call, so a crash mid-call leaves the request with the provider it was sent to.
    expect(pins).toEqual(["a", "b", "c"].map((n) => providerIdOf(p(n))));
  });

  it("stops at an unknown outcome or a 400, and sends nothing when the record moved on", async () => {
    const lostFirst = upstreams({ a: lost, b: ok });
    const router = new UpstreamRouter({ providerFor: lostFirst.providerFor, retryDelaysMs: [], logger });
    expect(await router.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "unknown" });
    expect(lostFirst.calls).toEqual(["a"]);

    const refused = upstreams({ a: refuse(400), b: ok });
    const r2 = new UpstreamRouter({ providerFor: refused.providerFor, retryDelaysMs: [], logger });
    expect(await r2.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "failed" });
    expect(refused.calls).toEqual(["a"]);

    const moved = upstreams({ a: ok, b: ok });
    const r3 = new UpstreamRouter({ providerFor: moved.providerFor, retryDelaysMs: [], logger });
    expect(await r3.send(planOf([p("a"), p("b")]), null, { timeoutMs: 1000, pin: () => Promise.resolve(false) })).toEqual({ kind: "moved" });
    expect(moved.calls).toEqual([]);
  });

  it("sends a later attempt to the recorded provider only, healthy or not", async () => {
    const u = upstreams({ a: ok, b: refuse(500) });
    const health: ProviderHealth = {
      usable: () => Promise.resolve(new Set()),
      admit: () => Promise.resolve(undefined),
      countTokens: () => Promise.resolve(),
      failed: () => Promise.resolve(),
      succeeded: () => Promise.resolve(),
    };
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [], logger, health });
    const sent = await router.send(planOf([p("a"), p("b", { rpm: 1 })]), providerIdOf(p("b")), { timeoutMs: 1000, pin: pinAll });
    expect(sent).toMatchObject({ kind: "failed", refused: [providerIdOf(p("b"))] });
    expect(u.calls).toEqual(["b"]);
  });

  it("passes over providers cooling down, and fails at once when all are", async () => {
    const u = upstreams({ a: ok, b: ok });
    let usable = new Set([providerIdOf(p("b"))]);
    const health: ProviderHealth = {
      usable: () => Promise.resolve(usable),
      admit: () => Promise.resolve({ minute: null }),
      countTokens: () => Promise.resolve(),
      failed: () => Promise.resolve(),
      succeeded: () => Promise.resolve(),
    };
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [], logger, health });
    expect(await router.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "answered" });
    usable = new Set();
    expect(await router.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "failed", refused: [] });
    expect(u.calls).toEqual(["b"]);
  });

  it("passes over a provider at its rpm cap without counting it as refused or failing", async () => {
    const u = upstreams({ a: ok, b: ok });
    const failed: string[] = [];
    const health: ProviderHealth = {
      usable: (ids) => Promise.resolve(new Set(ids)),
      admit: (id) => Promise.resolve(id !== providerIdOf(p("a")) ? { minute: null } : undefined),
      countTokens: () => Promise.resolve(),
      failed: (id) => Promise.resolve(void failed.push(id)),
      succeeded: () => Promise.resolve(),
    };
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [], logger, health });
    const sent = await router.send(planOf([p("a", { rpm: 5 }), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll });
    expect(sent).toMatchObject({ kind: "answered", provider: providerIdOf(p("b")), refused: [] });
    expect(u.calls).toEqual(["b"]);
    expect(failed).toEqual([]);
  });

  it("spreads equal priorities by weight", async () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const u = upstreams({ a: ok, b: ok });
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [], logger, random });
    for (let i = 0; i < 1000; i++) await router.send(planOf([p("a", { weight: 3 }), p("b")]), null, { timeoutMs: 1000, pin: pinAll });
    const share = u.calls.filter((c) => c === "a").length / 1000;
    expect(share).toBeGreaterThan(0.7);
    expect(share).toBeLessThan(0.8);
  });

  it("calls a model's only provider as before: retried inline, its request unchanged", async () => {
    let failures = 2;
    const u = upstreams({
      a: () => {
        if (failures-- > 0) throw new UpstreamError("failed", "503", 503);
        return answer;
      },
    });
    const router = new UpstreamRouter({ providerFor: u.providerFor, retryDelaysMs: [0, 0], logger });
    const sent = await router.send(planOf([p("a")]), null, { timeoutMs: 1000, pin: () => Promise.reject(new Error("no record write")) });
    expect(sent).toMatchObject({ kind: "answered" });
    expect(u.calls).toEqual(["public", "public", "public"]);
  });
});
