import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import autocannon from "autocannon";
import { Client } from "pg";
import { repoRoot } from "@meter/local-infra";
import { FAKE_MODEL, startSystemUnderTest, type SystemUnderTest } from "@meter/testing";
import { allProcesses, machineTicks, memoryOf, TICKS_PER_S } from "./proc";
import { printProfileSummary } from "./profile-summary";
import { runWaterfall } from "./waterfall";

/**
 * `pnpm bench:text`: one run, side by side, against the same fake upstream in its own process:
 *
 * - direct:    the load straight to the fake upstream;
 * - forwarder: a bare Express 5 + http-proxy-middleware forwarder in its own process in front of it
 *              (no auth, no billing: the floor any gateway of this design pays);
 * - metered:   the real system (billing-ledger, text and the gateway as real processes), POST
 *              /v1/messages with a fresh Idempotency-Key per request, spread over many organizations'
 *              keys; and `hot`: the same with every request from one organization's one key.
 *
 * For each concurrency: req/s, p50/p90/p99 of the 2xx answers, answers by status, CPU seconds per 1,000
 * requests of every process (from /proc: gateway, text, billing-ledger, forwarder, upstream, this run's
 * PostgreSQL backends, RabbitMQ, the load generator), RSS per process. After each metered run every
 * request is brought to a final answer (each 202, and each request the load generator left unanswered
 * when it stopped, is retried with its key until final), every hold must be resolved and no text
 * request left unfinished. Then, unless BENCH_KILL=none: billing-ledger is SIGKILLed during a
 * concurrency-16 run and started again ~2 s later. At the end the books check, and a cross-check of
 * every text request against its hold (settled exactly once, for its cost; failed ones released).
 *
 * Env:
 *   BENCH_DURATION_S     seconds per run (10)
 *   BENCH_CONNECTIONS    concurrency levels ("1,16,64,256"; "16" when profiling)
 *   BENCH_TARGETS        which runs ("direct,forwarder,metered,hot")
 *   BENCH_ORGS           organizations (each with one key) the metered load is spread over (64)
 *   BENCH_KILL           "billing" (default; "none" when profiling) or "none"
 *   BENCH_PROFILE_DIR    run every service and the forwarder with --cpu-prof into this folder, and
 *                        summarize the profiles over each run's window at the end
 *   BENCH_JSON           where the figures go as JSON (bench/text/last-run.json, git-ignored)
 *   BENCH_WATERFALL      n: instead of the load runs, the c=1 waterfall of n sequential requests of each kind
 *                        (bench/text/waterfall.ts): every mark of the gateway, text and billing-ledger on one
 *                        time axis, and each step's p50/p90. BENCH_WATERFALL_MODEL picks the model (the fake upstream's),
 *                        BENCH_WATERFALL_KINDS the requests ("messages,quote,models"), BENCH_WATERFALL_GAP_MS a pause
 *                        before each request (the previous one's tail then over); with BENCH_PROFILE_DIR, CPU profiles
 *   BENCH_QUIET_CORES    on a shared machine: before each run, wait (up to 3 minutes) until the
 *                        machine's CPU outside this benchmark is below this many cores, and run again
 *                        (up to twice) a run during which other work took more than that. Default 0.3;
 *                        "off" disables both.
 *
 * Exit code 1 when an invariant breaks: a 5xx other than 503 with Retry-After, a request left without a
 * final answer, a hold left active, the books check or the cross-check failing.
 */

const profileDir = process.env.BENCH_PROFILE_DIR ? path.resolve(process.env.BENCH_PROFILE_DIR) : undefined;
const duration = Number(process.env.BENCH_DURATION_S ?? 10);
const levels = (process.env.BENCH_CONNECTIONS ?? (profileDir ? "16" : "1,16,64,256")).split(",").map(Number);
const targets = (process.env.BENCH_TARGETS ?? "direct,forwarder,metered,hot").split(",") as Target[];
const orgCount = Number(process.env.BENCH_ORGS ?? 64);
const killMode = process.env.BENCH_KILL ?? (profileDir ? "none" : "billing");
const jsonPath = process.env.BENCH_JSON ?? path.join(__dirname, "last-run.json");
const quietCores = process.env.BENCH_QUIET_CORES === "off" ? undefined : Number(process.env.BENCH_QUIET_CORES ?? 0.3);

type Target = "direct" | "forwarder" | "metered" | "hot";
const SERVICES = ["gateway", "text", "billing-ledger"] as const;
/** Process groups charged with CPU, in print order. */
const GROUPS = ["gateway", "text", "billing-ledger", "forwarder", "upstream", "postgres", "rabbitmq", "loadgen"] as const;
type Group = (typeof GROUPS)[number] | "pg-all";

const upstreamBody = JSON.stringify({ model: "claude-fake", max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });
const gatewayBody = JSON.stringify({ model: FAKE_MODEL, max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] });

interface Latency {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

interface RunFigures {
  target: Target | "kill";
  connections: number;
  seconds: number;
  completed: number;
  rps: number;
  /** Over the 2xx answers, ms. */
  latency: Latency;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** 503 answers with Retry-After: load shed as it should be. */
  shed: number;
  /** Any other 5xx: a failure. */
  bad5xx: Record<string, number>;
  /** CPU seconds per 1,000 completed requests, and share of one core, per process group. */
  cpu: Partial<Record<Group, { perKReq: number; cores: number }>>;
  rssMiB: Partial<Record<Group, number>>;
  machine: { busyCores: number; otherCores: number; load1: [number, number]; waitedForQuietS?: number; attempts?: number };
  /** The run's time on the monotonic clock, µs (what the CPU profiles' samples are stamped with). */
  window: { label: string; startUs: number; endUs: number };
  /** Metered runs: calls, transactions and commits per request (the services' /metrics and pg_stat_database). */
  perRequest?: Record<string, number>;
  /**
   * Metered runs: the PostgreSQL backends of this run by what they were doing, sampled every 100 ms
   * (pg_stat_activity): mean number of backends per "database state wait_event" during the run.
   */
  backends?: Record<string, number>;
  final?: FinalFigures;
  outage?: OutageFigures;
}

interface FinalFigures {
  /** Requests retried with their key after the run: the 202s and those the load generator left unanswered. */
  followedUp: number;
  pending202: number;
  abandoned: number;
  finalStatuses: Record<string, number>;
  unresolved: number;
  activeHolds: number;
  unfinishedTextRequests: number;
  drainS: number;
}

interface OutageFigures {
  killedAtS: number;
  readyAtS: number;
  /** Answers from the kill to 1 s after billing-ledger was ready again, and all the others of the run. */
  during: Record<string, number>;
  otherwise: Record<string, number>;
}

/** A process of ours, started with node and tsx, printing one JSON line when ready. */
async function startHelper(
  file: string,
  args: string[],
  nodeArgs: string[],
): Promise<{ child: ChildProcess; info: { url?: string; anthropicBaseUrl?: string; pid: number } }> {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join(__dirname, file), ...args], {
    cwd: repoRoot(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const info = await new Promise<{ url?: string; anthropicBaseUrl?: string; pid: number }>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${file} exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line) as { pid: number }));
  });
  return { child, info };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Context {
  sut: SystemUnderTest;
  upstreamPid: number;
  forwarderPid: number;
  upstreamUrl: string;
  forwarderUrl: string;
  dbNames: string[];
  textDb: Client;
  billingDb: Client;
  manyKeys: string[];
  hotKey: string;
  windows: { label: string; startUs: number; endUs: number }[];
}

type Snapshot = { ticks: Map<number, number>; groups: Map<Group, number[]>; machine: { busy: number; total: number }; at: number };

function snapshot(ctx: Context): Snapshot {
  const groups = new Map<Group, number[]>();
  const ticks = new Map<number, number>();
  const add = (g: Group, pid: number) => groups.set(g, [...(groups.get(g) ?? []), pid]);
  const entries = SERVICES.map((s) => [s, path.join(repoRoot(), s === "gateway" ? "gateway" : `services/${s}`, "src", "main.ts")] as const);
  for (const p of allProcesses()) {
    ticks.set(p.pid, p.ticks);
    if (p.ppid === process.pid) {
      for (const [s, entry] of entries) if (p.cmdline.includes(entry)) add(s, p.pid);
    }
    if (p.pid === ctx.upstreamPid) add("upstream", p.pid);
    if (p.pid === ctx.forwarderPid) add("forwarder", p.pid);
    if (p.pid === process.pid) add("loadgen", p.pid);
    if (p.comm === "postgres") {
      add("pg-all", p.pid);
      if (ctx.dbNames.some((n) => p.cmdline.includes(` ${n} `))) add("postgres", p.pid);
    }
    if (p.comm === "beam.smp") add("rabbitmq", p.pid);
  }
  return { ticks, groups, machine: machineTicks(), at: performance.now() };
}

function cpuBetween(
  before: Snapshot,
  after: Snapshot,
  completed: number,
): { cpu: RunFigures["cpu"]; rssMiB: RunFigures["rssMiB"]; machine: Omit<RunFigures["machine"], "load1"> } {
  const seconds = (after.at - before.at) / 1000;
  const cpu: RunFigures["cpu"] = {};
  const rssMiB: RunFigures["rssMiB"] = {};
  let ours = 0;
  for (const [group, pids] of after.groups) {
    const ticks = pids.reduce((sum, pid) => sum + (after.ticks.get(pid)! - (before.ticks.get(pid) ?? 0)), 0);
    const s = ticks / TICKS_PER_S;
    cpu[group] = { perKReq: completed > 0 ? (s / completed) * 1000 : NaN, cores: s / seconds };
    if (group !== "pg-all") ours += s;
    // PostgreSQL backends share memory: their private memory is what each connection costs.
    const mem = pids.map(memoryOf).filter((m) => m !== undefined);
    rssMiB[group] = group === "postgres" || group === "pg-all" ? mem.reduce((a, m) => a + m.anonMiB, 0) : mem.reduce((a, m) => a + m.rssMiB, 0);
  }
  const busy = (after.machine.busy - before.machine.busy) / TICKS_PER_S;
  return { cpu, rssMiB, machine: { busyCores: busy / seconds, otherCores: (busy - ours) / seconds } };
}

interface Tracking {
  /** Idempotency key -> API key, for requests sent and not yet answered. */
  outstanding: Map<string, string>;
  /** Idempotency key -> API key, for requests answered 202. */
  pending: Map<string, string>;
  shed: number;
  bad5xx: Record<string, number>;
  events?: { at: number; status: number }[];
}

async function load(
  ctx: Context,
  target: Target | "kill",
  connections: number,
  seconds: number,
  opts: { during?: (startedAt: number) => Promise<void> } = {},
): Promise<RunFigures & { tracking: Tracking }> {
  const metered = target === "metered" || target === "hot" || target === "kill";
  const keys = target === "hot" ? [ctx.hotKey] : ctx.manyKeys;
  const url = metered ? `${ctx.sut.url}/v1/messages` : `${target === "direct" ? ctx.upstreamUrl : ctx.forwarderUrl}/v1/messages`;
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
    headers: metered ? { "content-type": "application/json" } : { "content-type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01" },
    body: metered ? gatewayBody : upstreamBody,
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
async function sampleBackends(ctx: Context, until: Promise<unknown>): Promise<Record<string, number>> {
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the CPU the machine spends outside this benchmark's processes (other people's tests, a
 * build...) stays below `cores` for 2 s, or `maxS` pass. Returns the seconds waited.
 */
async function waitQuiet(ctx: Context, cores: number, maxS = 180): Promise<number> {
  const started = performance.now();
  for (;;) {
    const before = snapshot(ctx);
    await sleep(2000);
    const { machine } = cpuBetween(before, snapshot(ctx), 0);
    if (machine.otherCores < cores || performance.now() - started > maxS * 1000) return (performance.now() - started) / 1000;
  }
}

/**
 * Counters of the metered system: each service's requests by route and its own *_total counters (from
 * its /metrics), and each database's commits and rows written (pg_stat_database).
 */
async function counters(ctx: Context): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const service of ["text", "billing-ledger"] as const) {
    try {
      const body = await (await fetch(`${ctx.sut.system.urls[service]}/metrics`)).text();
      for (const line of body.split("\n")) {
        const m = /^(http_request_duration_seconds_count|http_request_duration_seconds_sum|[a-z_]+_total)\{([^}]*)\} ([0-9.e+-]+)$/.exec(line);
        if (!m) continue;
        const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
        if (labels.route === "/metrics") continue;
        delete labels.service;
        if (m[1]!.startsWith("nodejs_") || m[1]!.startsWith("process_")) continue;
        const name = m[1]!.startsWith("http_request_duration_seconds")
          ? `${labels.method} ${labels.route} ${labels.status}${m[1]!.endsWith("_sum") ? " (s)" : ""}`
          : `${m[1]}${Object.keys(labels).length ? JSON.stringify(labels) : ""}`;
        out.set(`${service}: ${name}`, Number(m[3]));
      }
    } catch {
      // a service that is down has no counters
    }
  }
  const { rows } = await ctx.textDb.query<{ datname: string; xact_commit: string; tup_inserted: string; tup_updated: string; tup_deleted: string }>(
    "SELECT datname, xact_commit, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = ANY($1)",
    [ctx.dbNames],
  );
  for (const r of rows) {
    const db = r.datname === ctx.dbNames[0] ? "text db" : "billing db";
    out.set(`${db}: commits`, Number(r.xact_commit));
    out.set(`${db}: rows inserted`, Number(r.tup_inserted));
    out.set(`${db}: rows updated`, Number(r.tup_updated));
    out.set(`${db}: rows deleted`, Number(r.tup_deleted));
  }
  return out;
}

/** Each counter's growth per completed request; for a route's time (its "(s)" sum), the mean ms per call instead. */
function perRequest(before: Map<string, number>, after: Map<string, number>, completed: number): Record<string, number> {
  const out: Record<string, number> = {};
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  for (const k of after.keys()) {
    const d = delta(k);
    if (d <= 0 || completed === 0) continue;
    if (k.endsWith(" (s)")) out[`${k.slice(0, -4)}: mean ms`] = (1000 * d) / Math.max(1, delta(k.slice(0, -4)));
    else out[k] = d / completed;
  }
  return out;
}

/**
 * Brings every request of a metered run to a final answer: each 202, and each request the load
 * generator left without an answer when it stopped (or lost to an error), is sent again with its
 * Idempotency-Key and body until the answer is final. Then waits for billing to have applied every
 * settlement and release (no active hold) and for the text service to have no unfinished request.
 */
async function finalize(ctx: Context, tracking: Tracking): Promise<FinalFigures> {
  const started = performance.now();
  const queue = [...tracking.pending, ...tracking.outstanding];
  const finalStatuses: Record<string, number> = {};
  let unresolved = 0;
  const worker = async () => {
    for (let item = queue.pop(); item; item = queue.pop()) {
      const [idem, key] = item;
      const deadline = Date.now() + 120_000;
      for (;;) {
        let status = 0;
        let wait = 500;
        try {
          const res = await fetch(`${ctx.sut.url}/v1/messages`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "idempotency-key": idem },
            body: gatewayBody,
          });
          status = res.status;
          wait = Math.min(2000, Number(res.headers.get("retry-after") ?? 0.5) * 1000);
          await res.arrayBuffer();
        } catch {
          // not answered: try again
        }
        // 202: not final yet; 429/503 (and no answer): this attempt was not taken, the first may still be under way.
        if (![0, 202, 429, 503].includes(status)) {
          finalStatuses[status] = (finalStatuses[status] ?? 0) + 1;
          break;
        }
        if (Date.now() > deadline) {
          unresolved++;
          break;
        }
        await sleep(wait);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  // Settlements reach billing through the outbox and RabbitMQ a moment after each answer.
  let activeHolds = -1;
  let unfinishedTextRequests = -1;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const holds = await ctx.sut.admin<{ data: unknown[] }>("GET", "/admin/v1/holds?status=active&limit=500");
    activeHolds = holds.data.length;
    unfinishedTextRequests = Number((await ctx.textDb.query<{ n: string }>("SELECT count(*) AS n FROM text_requests WHERE state = 'reserving'")).rows[0]!.n);
    if ((activeHolds === 0 && unfinishedTextRequests === 0) || Date.now() > deadline) break;
    await sleep(200);
  }
  return {
    followedUp: tracking.pending.size + tracking.outstanding.size,
    pending202: tracking.pending.size,
    abandoned: tracking.outstanding.size,
    finalStatuses,
    unresolved,
    activeHolds,
    unfinishedTextRequests,
    drainS: (performance.now() - started) / 1000,
  };
}

/**
 * Every text request against its hold, across the two databases: a completed request's hold settled for
 * exactly its cost, a failed one's released, no hold left active, no hold resolved twice in the ledger.
 */
async function crossCheck(ctx: Context): Promise<{ ok: boolean; completed: number; failed: number; problems: Record<string, number> }> {
  try {
    return await crossCheckOrThrow(ctx);
  } catch (e) {
    return { ok: false, completed: 0, failed: 0, problems: { [`cross-check could not run: ${(e as Error).message}`]: 1 } };
  }
}

async function crossCheckOrThrow(ctx: Context): Promise<{ ok: boolean; completed: number; failed: number; problems: Record<string, number> }> {
  const text = await ctx.textDb.query<{ hold_id: string; state: string; cost: string | null }>(
    "SELECT hold_id, state::text AS state, cost FROM text_requests WHERE state IN ('completed', 'failed')",
  );
  const holds = await ctx.billingDb.query<{ id: string; status: string; settled: string | null }>("SELECT id, status::text AS status, settled FROM holds");
  const byId = new Map(holds.rows.map((h) => [h.id, h]));
  const problems: Record<string, number> = {};
  const problem = (what: string) => (problems[what] = (problems[what] ?? 0) + 1);
  let completed = 0;
  let failed = 0;
  for (const r of text.rows) {
    const h = byId.get(r.hold_id);
    if (r.state === "completed") {
      completed++;
      if (!h) problem("completed request without a hold");
      else if (h.status !== "settled") problem(`completed request, hold ${h.status}`);
      else if (h.settled !== r.cost) problem("settled amount differs from the request's cost");
    } else {
      failed++;
      if (h && h.status !== "released") problem(`failed request, hold ${h.status}`);
    }
  }
  for (const h of holds.rows) if (h.status === "active") problem("hold still active");
  const twice = await ctx.billingDb.query<{ n: string }>(
    "SELECT count(*) AS n FROM (SELECT hold_id, kind FROM ledger_entries WHERE hold_id IS NOT NULL GROUP BY hold_id, kind HAVING count(*) > 1) d",
  );
  if (Number(twice.rows[0]!.n) > 0) problems["hold with the same ledger entry twice"] = Number(twice.rows[0]!.n);
  return { ok: Object.keys(problems).length === 0, completed, failed, problems };
}

// ---------------------------------------------------------------------------------------------------
// Printing

const f0 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(0));
const f1 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(1));
const f2 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(2));
const statusText = (s: Record<string, number>) =>
  Object.entries(s)
    .filter(([k]) => !k.startsWith("2") || k === "202")
    .map(([k, v]) => `${k}:${v}`)
    .join(" ") || "0";

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

function printRuns(runs: RunFigures[]): void {
  const forwarderAt = new Map(runs.filter((r) => r.target === "forwarder").map((r) => [r.connections, r]));
  const directAt = new Map(runs.filter((r) => r.target === "direct").map((r) => [r.connections, r]));
  console.log("\nThroughput and latency (latency of the 2xx answers; non-2xx by status; 202 counted apart)");
  console.log(
    table(
      ["target", "conc", "req/s", "x fwd", "p50 ms", "p90 ms", "p99 ms", "+p50 vs direct", "non-2xx", "errors", "busy cores", "other cores", "load1"],
      runs.map((r) => [
        r.target,
        String(r.connections),
        f0(r.rps),
        forwarderAt.get(r.connections) ? f2(r.rps / forwarderAt.get(r.connections)!.rps) : "-",
        f2(r.latency.p50),
        f2(r.latency.p90),
        f2(r.latency.p99),
        directAt.get(r.connections) ? f2(r.latency.p50 - directAt.get(r.connections)!.latency.p50) : "-",
        statusText(r.statuses),
        String(r.errors + r.timeouts),
        f2(r.machine.busyCores),
        f2(r.machine.otherCores),
        `${f1(r.machine.load1[0])}/${f1(r.machine.load1[1])}`,
      ]),
    ),
  );
  const groups: Group[] = [...GROUPS, "pg-all"];
  console.log("\nCPU seconds per 1,000 requests, by process (pg = this run's PostgreSQL backends; pg-all = every postgres process, other work included)");
  console.log(
    table(
      ["target", "conc", ...groups.map((g) => (g === "postgres" ? "pg" : g)), "sum (no pg-all)"],
      runs.map((r) => [
        r.target,
        String(r.connections),
        ...groups.map((g) => f2(r.cpu[g]?.perKReq)),
        f2(GROUPS.reduce((a, g) => a + (r.cpu[g]?.perKReq ?? 0), 0)),
      ]),
    ),
  );
  console.log("\nShare of one core, by process");
  console.log(
    table(
      ["target", "conc", ...groups.map((g) => (g === "postgres" ? "pg" : g))],
      runs.map((r) => [r.target, String(r.connections), ...groups.map((g) => f2(r.cpu[g]?.cores))]),
    ),
  );
  console.log("\nRSS MiB at the end of each run (PostgreSQL: private memory of the backends)");
  console.log(
    table(
      ["target", "conc", ...groups.map((g) => (g === "postgres" ? "pg" : g))],
      runs.map((r) => [r.target, String(r.connections), ...groups.map((g) => f0(r.rssMiB[g]))]),
    ),
  );
  const counted = runs.filter((r) => r.perRequest);
  if (counted.length > 0) {
    const names = [...new Set(counted.flatMap((r) => Object.keys(r.perRequest!)))].sort();
    console.log("\nPer metered request: internal calls by route and status, hold transactions, commits and rows written per database");
    console.log(
      table(
        ["what", "", ...counted.map((r) => `${r.target}@${r.connections}`)],
        names.map((n) => [n, "", ...counted.map((r) => f2(r.perRequest![n] ?? 0))]),
      ),
    );
  }
  const sampled = runs.filter((r) => r.backends);
  if (sampled.length > 0) {
    const names = [...new Set(sampled.flatMap((r) => Object.keys(r.backends!)))].sort();
    console.log("\nPostgreSQL backends of the run by state and wait event (mean number at any moment, sampled every 100 ms)");
    console.log(
      table(
        ["what", "", ...sampled.map((r) => `${r.target}@${r.connections}`)],
        names.map((n) => [n, "", ...sampled.map((r) => f2(r.backends![n] ?? 0))]),
      ),
    );
  }
  const finals = runs.filter((r) => r.final);
  if (finals.length > 0) {
    console.log("\nAfter each metered run: every request brought to a final answer, every hold resolved");
    console.log(
      table(
        [
          "target",
          "conc",
          "503+Retry-After",
          "other 5xx",
          "202",
          "unanswered at stop",
          "final answers of those",
          "left unresolved",
          "active holds",
          "unfinished",
          "drain s",
        ],
        finals.map((r) => [
          r.target,
          String(r.connections),
          String(r.shed),
          statusText(r.bad5xx),
          String(r.final!.pending202),
          String(r.final!.abandoned),
          statusText(r.final!.finalStatuses).replace(/^0$/, "-") + (r.final!.finalStatuses["200"] ? ` 200:${r.final!.finalStatuses["200"]}` : ""),
          String(r.final!.unresolved),
          String(r.final!.activeHolds),
          String(r.final!.unfinishedTextRequests),
          f1(r.final!.drainS),
        ]),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const nodeArgs = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  console.log(
    `bench:text: ${levels.join(", ")} connections, ${duration} s per run, ${orgCount} organizations; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const upstream = await startHelper("fake-upstream.process.ts", [], []);
  if (process.env.BENCH_WATERFALL) {
    try {
      await runWaterfall({
        requests: Number(process.env.BENCH_WATERFALL),
        upstreamUrl: upstream.info.anthropicBaseUrl!,
        upstreamPid: upstream.info.pid,
        ...(process.env.BENCH_WATERFALL_MODEL ? { model: process.env.BENCH_WATERFALL_MODEL } : {}),
        ...(process.env.BENCH_WATERFALL_KINDS ? { kinds: process.env.BENCH_WATERFALL_KINDS.split(",") as ("messages" | "quote" | "models")[] } : {}),
        ...(profileDir ? { profileDir } : {}),
        ...(process.env.BENCH_WATERFALL_GAP_MS ? { gapMs: Number(process.env.BENCH_WATERFALL_GAP_MS) } : {}),
      });
    } finally {
      await stopChild(upstream.child);
    }
    return;
  }
  const forwarder = await startHelper("forwarder.process.ts", [upstream.info.anthropicBaseUrl!], nodeArgs);
  let sut: SystemUnderTest | undefined;
  const clients: Client[] = [];
  const runs: RunFigures[] = [];
  const checks: { name: string; ok: boolean; detail: string }[] = [];
  const windows: Context["windows"] = [];
  let idle: RunFigures["cpu"] = {};
  /** Runs measured again because other work disturbed them: not printed, but checked like the rest. */
  const discarded: RunFigures[] = [];
  try {
    sut = await startSystemUnderTest({
      only: ["billing-ledger", "text", "gateway"],
      upstream: { anthropicBaseUrl: upstream.info.anthropicBaseUrl! },
      // The services' own defaults, not the test stack's quick timers (catalog reload and reconciler every
      // 200 ms), which would charge every request here with background work a deployment does not do.
      env: { LOG_LEVEL: "warn", CATALOG_REFRESH_MS: "2000", RECONCILE_INTERVAL_MS: "1000", WORKER_STALE_MS: "15000" },
      ...(profileDir ? { nodeArgs } : {}),
    });
    const textUrl = sut.env.TEXT_DATABASE_URL!;
    const billingUrl = sut.env.BILLING_LEDGER_DATABASE_URL!;
    const textDb = new Client({ connectionString: textUrl });
    const billingDb = new Client({ connectionString: billingUrl });
    clients.push(textDb, billingDb);
    await Promise.all(clients.map((c) => c.connect()));

    // Many organizations (one key each), and one hot organization with one key.
    const accounts = [];
    for (let i = 0; i < orgCount; i++) accounts.push(await sut.account({ credit: 1_000_000_000_000, dailyBudget: 1_000_000_000_000 }));
    const hot = await sut.account({ credit: 1_000_000_000_000, dailyBudget: 1_000_000_000_000 });
    const ctx: Context = {
      sut,
      upstreamPid: upstream.info.pid,
      forwarderPid: forwarder.info.pid,
      upstreamUrl: upstream.info.anthropicBaseUrl!,
      forwarderUrl: forwarder.info.url!,
      dbNames: [textUrl, billingUrl].map((u) => new URL(u).pathname.slice(1)),
      textDb,
      billingDb,
      manyKeys: accounts.map((a) => a.key),
      hotKey: hot.key,
      windows,
    };
    if (profileDir) {
      const pids = Object.fromEntries([...snapshot(ctx).groups].filter(([g]) => !["pg-all", "postgres", "rabbitmq"].includes(g)).map(([g, p]) => [g, p]));
      writeFileSync(path.join(profileDir, "processes.json"), JSON.stringify(pids, null, 2));
    }

    // Warm up connection pools, the JIT, the key and catalog caches.
    for (const t of targets) {
      const w = await load(ctx, t, 8, 3);
      if (w.final === undefined && (t === "metered" || t === "hot")) await finalize(ctx, w.tracking);
    }
    windows.length = 0;

    // What the system burns with no load at all (timers: reconciler, relay, catalog reload, heartbeats,
    // key cache...): at low rates it is charged to few requests.
    const restBefore = snapshot(ctx);
    await sleep(5000);
    idle = cpuBetween(restBefore, snapshot(ctx), 0).cpu;
    console.log(`at rest (no load, 5 s), share of one core: ${GROUPS.map((g) => `${g} ${f2(idle[g]?.cores ?? 0)}`).join(", ")}`);

    for (const c of levels) {
      for (const t of targets) {
        const metered = t === "metered" || t === "hot";
        let best: RunFigures | undefined;
        let waited = 0;
        for (let attempt = 1; attempt <= (quietCores === undefined ? 1 : 3); attempt++) {
          if (quietCores !== undefined) waited += await waitQuiet(ctx, quietCores);
          const countersBefore = metered ? await counters(ctx) : undefined;
          const r = await load(ctx, t, c, duration);
          if (countersBefore) r.perRequest = perRequest(countersBefore, await counters(ctx), r.completed);
          // Every run's requests are brought to a final answer, kept or not.
          if (metered) r.final = await finalize(ctx, r.tracking);
          const { tracking: _t, ...figures } = r;
          figures.machine.attempts = attempt;
          figures.machine.waitedForQuietS = waited;
          if (!best || figures.machine.otherCores < best.machine.otherCores) {
            if (best) discarded.push(best);
            best = figures;
          } else {
            discarded.push(figures);
          }
          // The profiles are summarized over the kept run's window only.
          for (const d of discarded) windows.splice(0, windows.length, ...windows.filter((w) => w !== d.window));
          if (quietCores === undefined || figures.machine.otherCores < quietCores) break;
          console.log(`  (${t} c=${c}: other work took ${f2(figures.machine.otherCores)} cores during the run; running it again)`);
          if (figures.final && (figures.final.unresolved > 0 || figures.final.activeHolds > 0 || figures.final.unfinishedTextRequests > 0)) break;
          if (Object.keys(figures.bad5xx).length > 0) break;
        }
        const figures = best!;
        const r = figures;
        runs.push(figures);
        console.log(
          `${t.padEnd(9)} c=${String(c).padEnd(3)} ${f0(r.rps).padStart(6)} req/s  p50 ${f2(r.latency.p50)} ms  p99 ${f2(r.latency.p99)} ms  non-2xx ${statusText(r.statuses)}  busy ${f2(r.machine.busyCores)} cores (other work ${f2(r.machine.otherCores)})`,
        );
      }
    }

    const books = sut.booksCheck();
    const cross = await crossCheck(ctx);
    checks.push({ name: "books check after the load runs", ok: books.ok, detail: books.output.trim().split("\n").slice(-1)[0] ?? "" });
    checks.push({
      name: "cross-check after the load runs",
      ok: cross.ok,
      detail: `${cross.completed} completed, ${cross.failed} failed; ${JSON.stringify(cross.problems)}`,
    });

    if (killMode === "billing") {
      const killC = 16;
      const killS = Math.max(duration, 10);
      let runStart = 0;
      let killedAt = 0;
      let readyAt = 0;
      if (quietCores !== undefined) await waitQuiet(ctx, quietCores);
      console.log(`\nkill run: c=${killC} for ${killS} s; billing-ledger SIGKILLed at 3 s, started again 2 s later`);
      const r = await load(ctx, "kill", killC, killS, {
        during: async (startedAt) => {
          runStart = startedAt;
          await sleep(3000);
          killedAt = performance.now();
          await sut!.system.kill("billing-ledger", "SIGKILL");
          await sleep(2000);
          await sut!.system.start("billing-ledger");
          readyAt = performance.now();
        },
      });
      r.final = await finalize(ctx, r.tracking);
      const during: Record<string, number> = {};
      const otherwise: Record<string, number> = {};
      for (const e of r.tracking.events ?? []) {
        const bucket = e.at >= killedAt && e.at <= readyAt + 1000 ? during : otherwise;
        bucket[e.status] = (bucket[e.status] ?? 0) + 1;
      }
      r.outage = { killedAtS: (killedAt - runStart) / 1000, readyAtS: (readyAt - runStart) / 1000, during, otherwise };
      const { tracking: _t, ...figures } = r;
      runs.push(figures);
      console.log(
        `kill      c=${killC}  ${f0(r.rps).padStart(6)} req/s  statuses ${JSON.stringify(r.statuses)}; killed at ${f1(r.outage.killedAtS)} s, ready again at ${f1(r.outage.readyAtS)} s; during the outage (to 1 s after): ${JSON.stringify(during)}`,
      );
      const books2 = sut.booksCheck();
      const cross2 = await crossCheck(ctx);
      checks.push({ name: "books check after the kill run", ok: books2.ok, detail: books2.output.trim().split("\n").slice(-1)[0] ?? "" });
      checks.push({
        name: "cross-check after the kill run",
        ok: cross2.ok,
        detail: `${cross2.completed} completed, ${cross2.failed} failed; ${JSON.stringify(cross2.problems)}`,
      });
    }

    for (const r of [...runs, ...discarded]) {
      const bad = Object.values(r.bad5xx).reduce((a, b) => a + b, 0);
      if (bad > 0) checks.push({ name: `${r.target}@${r.connections}: 5xx other than 503 with Retry-After`, ok: false, detail: JSON.stringify(r.bad5xx) });
      if (r.final && (r.final.unresolved > 0 || r.final.activeHolds > 0 || r.final.unfinishedTextRequests > 0)) {
        checks.push({ name: `${r.target}@${r.connections}: every request final, every hold resolved`, ok: false, detail: JSON.stringify(r.final) });
      }
    }
    if (!checks.some((c) => c.name.includes("5xx"))) checks.push({ name: "no 5xx other than 503 with Retry-After, at any level", ok: true, detail: "" });
    if (!checks.some((c) => c.name.includes("every request final"))) {
      checks.push({ name: "after every metered run: every request final, no hold active, no text request unfinished", ok: true, detail: "" });
    }
  } finally {
    printRuns(runs);
    console.log("\nChecks");
    for (const c of checks) console.log(`  ${c.ok ? "ok  " : "FAIL"} ${c.name}${c.detail ? `: ${c.detail}` : ""}`);
    printTargets(runs);
    if (checks.some((c) => !c.ok)) process.exitCode = 1;
    mkdirSync(path.dirname(jsonPath), { recursive: true });
    writeFileSync(
      jsonPath,
      JSON.stringify(
        {
          at: new Date().toISOString(),
          duration,
          levels,
          orgCount,
          cpus: os.cpus().length,
          loadavg: os.loadavg(),
          atRest: idle,
          runs,
          discarded,
          checks,
          windows,
        },
        null,
        2,
      ),
    );
    console.log(`\nfigures written to ${path.relative(process.cwd(), jsonPath)}`);
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await sut?.close();
    await stopChild(forwarder.child);
    await stopChild(upstream.child);
    if (profileDir) {
      writeFileSync(path.join(profileDir, "windows.json"), JSON.stringify(windows, null, 2));
      printProfileSummary(profileDir);
    }
  }
}

function printTargets(runs: RunFigures[]): void {
  const at = (t: Target, c: number) => runs.find((r) => r.target === t && r.connections === c);
  const lines: string[] = [];
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const m16 = at("metered", 16);
  const f16 = at("forwarder", 16);
  if (m16 && f16) lines.push(`c16 metered / forwarder = ${f2(m16.rps / f16.rps)} (target >= 0.30): ${verdict(m16.rps / f16.rps >= 0.3)}`);
  const m1 = at("metered", 1);
  const d1 = at("direct", 1);
  if (m1 && d1) {
    const added = m1.latency.p50 - d1.latency.p50;
    lines.push(`c1 added p50 over direct = ${f2(added)} ms (target <= 6 ms): ${verdict(added <= 6)}`);
  }
  if (m16) {
    // Every process, the fake upstream and the load generator included: the issue's 9.7 ms was that sum.
    const groups: Group[] = ["gateway", "text", "billing-ledger", "upstream", "postgres", "rabbitmq", "loadgen"];
    const ms = groups.reduce((sum, g) => sum + (m16.cpu[g]?.perKReq ?? 0), 0);
    lines.push(`c16 CPU per paid request, all processes = ${f2(ms)} ms (target <= 4 ms): ${verdict(ms <= 4)}`);
  }
  for (const c of levels) {
    const h = at("hot", c);
    const m = at("metered", c);
    if (h && m) lines.push(`c${c} one hot organization / many = ${f2(h.rps / m.rps)} (target >= 0.80): ${verdict(h.rps / m.rps >= 0.8)}`);
  }
  if (lines.length > 0) console.log(`\nTargets (issue 23)\n${lines.map((l) => `  ${l}`).join("\n")}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(10_000)]);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
