import { providerIdOf, type Provider, type RoutedProvider } from "@meter/contracts";
import { createLogger } from "@meter/service-kit";
import type { ChatResult } from "../chat/chat-provider";
import { UpstreamError } from "../upstream-error";
import { UpstreamRouter, type ProviderHealth, type Route, type RouterDeps } from "./upstream-router";

const logger = createLogger("router-test", "silent");
const answer: ChatResult = { text: "ok", stopReason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } };

const p = (name: string, extra: Partial<RoutedProvider> = {}): RoutedProvider => ({
  kind: "openai-chat",
  base_url: `http://${name}.example/v1`,
  upstream_model: name,
  ...extra,
});

function planOf(providers: RoutedProvider[]): Route {
  return { providers, tokens: 11 };
}

/**
 * A router whose calls go to `providerFor(provider)`, with the public model's name when the model has
 * one provider (its request unchanged) and each provider's upstream model when it has several.
 */
function routerOf(deps: Omit<RouterDeps, "logger"> & { providerFor: ReturnType<typeof upstreams>["providerFor"] }) {
  const router = new UpstreamRouter({ ...deps, logger });
  return {
    send: (route: Route, pinned: string | null, opts: { timeoutMs: number; pin: (id: string, refused: readonly string[]) => Promise<boolean> }) =>
      router.send(route, pinned, {
        ...opts,
        call: (provider) => deps.providerFor(provider).complete({ model: route.providers.length > 1 ? provider.upstream_model! : "public" }),
      }),
  };
}

/** Providers answering as `behaviour` says, by upstream model; records the calls and their model. */
function upstreams(behaviour: Record<string, () => ChatResult>) {
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
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [0, 0] });
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
    const router = routerOf({ providerFor: lostFirst.providerFor, retryDelaysMs: [] });
    expect(await router.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "unknown" });
    expect(lostFirst.calls).toEqual(["a"]);

    const refused = upstreams({ a: refuse(400), b: ok });
    const r2 = routerOf({ providerFor: refused.providerFor, retryDelaysMs: [] });
    expect(await r2.send(planOf([p("a"), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll })).toMatchObject({ kind: "failed" });
    expect(refused.calls).toEqual(["a"]);

    const moved = upstreams({ a: ok, b: ok });
    const r3 = routerOf({ providerFor: moved.providerFor, retryDelaysMs: [] });
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
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [], health });
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
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [], health });
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
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [], health });
    const sent = await router.send(planOf([p("a", { rpm: 5 }), p("b", { priority: 1 })]), null, { timeoutMs: 1000, pin: pinAll });
    expect(sent).toMatchObject({ kind: "answered", provider: providerIdOf(p("b")), refused: [] });
    expect(u.calls).toEqual(["b"]);
    expect(failed).toEqual([]);
  });

  it("spreads equal priorities by weight", async () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const u = upstreams({ a: ok, b: ok });
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [], random });
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
    const router = routerOf({ providerFor: u.providerFor, retryDelaysMs: [0, 0] });
    const sent = await router.send(planOf([p("a")]), null, { timeoutMs: 1000, pin: () => Promise.reject(new Error("no record write")) });
    expect(sent).toMatchObject({ kind: "answered" });
    expect(u.calls).toEqual(["public", "public", "public"]);
  });
});
