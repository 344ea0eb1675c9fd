import { randomUUID } from "node:crypto";
import os from "node:os";
import autocannon from "autocannon";
import { FAKE_MODEL } from "@meter/testing";
import { cpuBetween, snapshot } from "./cpu";
import { percentile, sleep, type RunFigures, type Target } from "./figures";
import { portkeyBody, portkeyHeaders } from "./portkey";
import type { Context } from "./stack";

/** One load run with autocannon against a target, and what the run's PostgreSQL backends did meanwhile. */

export const upstreamBody = JSON.stringify({ model: "claude-fake", max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });
export const gatewayBody = JSON.stringify({ model: FAKE_MODEL, max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });

export interface Tracking {
  /** Idempotency key -> API key, for requests sent and not yet answered. */
  outstanding: Map<string, string>;
  /** Idempotency key -> API key, for requests answered 202. */
  pending: Map<string, string>;
  shed: number;
  bad5xx: Record<string, number>;
  events?: { at: number; status: number }[];
}

export async function load(
  ctx: Context,
  target: Target | "kill",
  connections: number,
  seconds: number,
  opts: { during?: (startedAt: number) => Promise<void> } = {},
): Promise<RunFigures & { tracking: Tracking }> {
  const metered = target === "metered" || target === "hot" || target === "kill";
  const keys = target === "hot" ? [ctx.hotKey] : ctx.manyKeys;
  const url = metered
    ? `${ctx.sut.url}/v1/messages`
    : target === "portkey"
      ? `${ctx.portkey!.url}/v1/chat/completions`
      : `${target === "direct" ? ctx.upstreamUrl : ctx.forwarderUrl}/v1/messages`;
  const tracking: Tracking = { outstanding: new Map(), pending: new Map(), shed: 0, bad5xx: {}, ...(target === "kill" ? { events: [] } : {}) };
  let turn = 0;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const requests: autocannon.Request[] | undefined = metered
    ? [
        {
          // A fresh Idempotency-Key per request (a new paid request, never a replay), keys taken in turn.
          setupRequest: (req, context) => {
            const c = context as { idem?: string; key?: string };
            c.idem = randomUUID();
            c.key = keys[turn++ % keys.length]!;
            tracking.outstanding.set(c.idem, c.key);
            return { ...req, headers: { ...req.headers, authorization: `Bearer ${c.key}`, "idempotency-key": c.idem } };
          },
          onResponse: (status, _body, context, headers) => {
            const c = context as { idem: string; key: string };
            tracking.outstanding.delete(c.idem);
            tracking.events?.push({ at: performance.now(), status });
            if (status === 202) tracking.pending.set(c.idem, c.key);
            if (status >= 500) {
              const retryAfter = Object.entries(headers ?? {}).some(([h]) => h.toLowerCase() === "retry-after");
              if (status === 503 && retryAfter) tracking.shed++;
              else tracking.bad5xx[status] = (tracking.bad5xx[status] ?? 0) + 1;
            }
          },
        },
      ]
    : undefined;
  const before = snapshot(ctx);
  const load1Before = os.loadavg()[0]!;
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const instance = autocannon({
    url,
    connections,
    duration: seconds,
    pipelining: 1,
    method: "POST",
    headers: metered
      ? { "content-type": "application/json" }
      : target === "portkey"
        ? portkeyHeaders(ctx.upstreamOpenaiUrl)
        : { "content-type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01" },
    body: metered ? gatewayBody : target === "portkey" ? portkeyBody : upstreamBody,
    ...(requests ? { requests } : {}),
    // Without a callback autocannon returns its run tracker, an event emitter that is also a promise.
  }) as unknown as autocannon.Instance;
  const done = instance as unknown as Promise<autocannon.Result>;
  instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status >= 200 && status < 300) latencies.push(ms);
  });
  const startedAt = performance.now();
  const side = opts.during?.(startedAt);
  const sampling = metered ? sampleBackends(ctx, done) : undefined;
  const result = await done;
  await side;
  const backends = await sampling;
  const endUs = Number(process.hrtime.bigint() / 1000n);
  const after = snapshot(ctx);
  const window = { label: `${target}@${connections}`, startUs, endUs };
  ctx.windows.push(window);
  const completed = Object.values(statuses).reduce((a, b) => a + b, 0);
  const elapsed = (after.at - before.at) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const { cpu, rssMiB, machine } = cpuBetween(before, after, completed);
  return {
    target,
    connections,
    seconds: elapsed,
    completed,
    rps: completed / (result.duration || elapsed),
    latency: { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN },
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    shed: tracking.shed,
    bad5xx: tracking.bad5xx,
    cpu,
    rssMiB,
    machine: { ...machine, load1: [load1Before, os.loadavg()[0]!] },
    ...(backends ? { backends } : {}),
    window,
    tracking,
  };
}

/** What the run's PostgreSQL backends are doing, every 100 ms until `until` settles (pg_stat_activity). */
export async function sampleBackends(ctx: Context, until: Promise<unknown>): Promise<Record<string, number>> {
  let over = false;
  // autocannon's tracker is a thenable without finally().
  void Promise.resolve(until).then(
    () => (over = true),
    () => (over = true),
  );
  const counts: Record<string, number> = {};
  let samples = 0;
  while (!over) {
    const { rows } = await ctx.billingDb.query<{ db: string; what: string; n: string }>(
      `SELECT datname AS db, state || COALESCE(' ' || wait_event_type || ':' || wait_event, '') AS what, count(*) AS n
       FROM pg_stat_activity WHERE datname = ANY($1) AND pid <> pg_backend_pid() GROUP BY 1, 2`,
      [ctx.dbNames],
    );
    samples++;
    for (const r of rows) {
      const key = `${r.db === ctx.dbNames[0] ? "text" : "billing"} ${r.what}`;
      counts[key] = (counts[key] ?? 0) + Number(r.n);
    }
    await sleep(100);
  }
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / Math.max(1, samples)]));
}
