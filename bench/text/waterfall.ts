import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { FAKE_MODEL, startSystemUnderTest } from "@meter/testing";
import { allProcesses, TICKS_PER_S } from "./proc";
import { printProfileSummary } from "./profile-summary";

/**
 * `BENCH_WATERFALL=<n> pnpm bench:text`: where the time of one request goes at concurrency 1. The
 * services run with METER_TIMINGS_DIR, so each writes the marks of every request (packages/service-kit
 * request-timings.ts) on the machine's monotonic clock, which this process shares: the bench's own send
 * and receive, the gateway's, text's and billing-ledger's marks line up on one time axis. n sequential
 * requests of each kind after a warm-up; per mark, the median offset from the client's send; per step,
 * the median and p90 of its duration; and the CPU each process spent per request. With `profileDir`
 * the services run with --cpu-prof, summarized over the paid requests' window at the end.
 */

interface Line {
  service: string;
  rid?: string;
  url: string;
  marks: [string, number][];
}

interface Sample {
  /** Mark name (`<process>.<mark>`) -> µs on the monotonic clock. */
  at: Map<string, number>;
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

const KINDS = {
  messages: {
    method: "POST",
    path: "/v1/messages",
    body: (model: string) => JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] }),
    paid: true,
  },
  quote: {
    method: "POST",
    path: "/v1/chat/quote",
    body: (model: string) => JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: "Hello, benchmark" }] }),
    paid: false,
  },
  models: { method: "GET", path: "/v1/models", body: undefined, paid: false },
} as const;
type Kind = keyof typeof KINDS;

/** Steps of a paid request: [label, from mark, to mark]; a step whose marks a request lacks is left out. */
const STEPS: [string, string, string][] = [
  ["client -> gateway (connection, parse headers)", "client.send", "gateway.in"],
  ["gateway: before auth (request id, metrics, routing)", "gateway.in", "gateway.auth.start"],
  ["gateway: key check (cache)", "gateway.auth.start", "gateway.auth.end"],
  ["gateway: body read + JSON check", "gateway.body.start", "gateway.body.end"],
  ["gateway: admission, scope", "gateway.body.end", "gateway.sign.start"],
  ["gateway: sign internal call", "gateway.sign.start", "gateway.sign.end"],
  ["gateway: proxy setup until request goes out", "gateway.sign.end", "gateway.proxy.request"],
  ["gateway -> text (hop)", "gateway.proxy.request", "text.in"],
  ["text: before verification", "text.in", "text.verify.start"],
  ["text: verify signature", "text.verify.start", "text.verify.end"],
  ["text: body read, parse, digest check", "text.body.start", "text.body.end"],
  ["text: validate, normalize", "text.validate.start", "text.validate.end"],
  ["text: fingerprint, plan, until hold call", "text.validate.end", "text.hold.start"],
  ["text: hold call (billing, overall)", "text.hold.start", "text.hold.end"],
  ["text: sign hold call", "text.call.billing-ledger.sign.start", "text.call.billing-ledger.sign.end"],
  ["text -> billing (hop)", "text.call.billing-ledger.sign.end", "billing-ledger.in"],
  ["billing: verify signature", "billing-ledger.verify.start", "billing-ledger.verify.end"],
  ["billing: body", "billing-ledger.body.start", "billing-ledger.body.end"],
  ["billing: hold ops (transaction, commit)", "billing-ledger.body.end", "billing-ledger.out"],
  ["billing -> text (hop, answer)", "billing-ledger.out", "text.call.billing-ledger.answered"],
  ["text: claim (overall)", "text.claim.start", "text.claim.end"],
  ["text: claim: pool acquire", "text.db.insert.start", "text.db.acquired"],
  ["text: claim: INSERT + commit (acquired -> result)", "text.db.acquired", "text.db.insert.end"],
  ["text: after claim+hold until upstream call", "text.hold.end", "text.upstream.start"],
  ["text: upstream call", "text.upstream.start", "text.upstream.end"],
  ["text: upstream answer until final commit", "text.upstream.end", "text.finish.start"],
  ["text: final commit (overall)", "text.finish.start", "text.finish.end"],
  ["text: final: pool acquire", "text.db.with.start", "text.db.acquired#2"],
  ["text: final: UPDATE + outbox + commit", "text.db.acquired#2", "text.db.with.end"],
  ["text: render until answer written", "text.finish.end", "text.out"],
  ["text -> gateway (hop, answer)", "text.out", "gateway.proxy.response"],
  ["gateway: answer through to client", "gateway.proxy.response", "gateway.out"],
  ["gateway -> client (hop, body read)", "gateway.out", "client.recv"],
  ["total (client)", "client.send", "client.recv"],
];

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function cpuTicks(pidsOf: () => Map<string, number[]>): Map<string, number> {
  const ticks = new Map(allProcesses().map((p) => [p.pid, p.ticks]));
  const out = new Map<string, number>();
  for (const [group, pids] of pidsOf())
    out.set(
      group,
      pids.reduce((a, pid) => a + (ticks.get(pid) ?? 0), 0),
    );
  return out;
}

export async function runWaterfall(opts: {
  requests: number;
  upstreamUrl: string;
  upstreamPid: number;
  model?: string;
  kinds?: Kind[];
  profileDir?: string;
  /** A pause before each request, so the previous one's tail (relay, settlement) is over when it starts. */
  gapMs?: number;
}): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "meter-timings-"));
  const model = opts.model ?? FAKE_MODEL;
  const kinds = opts.kinds ?? (["messages", "quote", "models"] as Kind[]);
  const sut = await startSystemUnderTest({
    only: ["billing-ledger", "text", "gateway"],
    upstream: { anthropicBaseUrl: opts.upstreamUrl },
    env: { LOG_LEVEL: "warn", CATALOG_REFRESH_MS: "2000", RECONCILE_INTERVAL_MS: "1000", WORKER_STALE_MS: "15000", METER_TIMINGS_DIR: dir },
    ...(opts.profileDir ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${opts.profileDir}`] } : {}),
  });
  if (opts.profileDir) mkdirSync(opts.profileDir, { recursive: true });
  const windows: { label: string; startUs: number; endUs: number }[] = [];
  try {
    const account = await sut.account({ credit: 1_000_000_000_000, dailyBudget: 1_000_000_000_000 });
    const entries = ["gateway", "services/text", "services/billing-ledger"].map((d) => [d.split("/").pop()!, path.join(d, "src", "main.ts")] as const);
    const pidsOf = () => {
      const groups = new Map<string, number[]>([
        ["bench", [process.pid]],
        ["upstream", [opts.upstreamPid]],
      ]);
      for (const p of allProcesses()) {
        if (p.ppid !== process.pid) continue;
        for (const [name, entry] of entries) if (p.cmdline.includes(entry)) groups.set(name, [...(groups.get(name) ?? []), p.pid]);
      }
      return groups;
    };
    console.log(
      `waterfall: ${opts.requests} sequential requests of each kind (${kinds.join(", ")}), model ${model}, ${opts.gapMs ?? 0} ms between; load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    for (const kind of kinds) {
      const spec = KINDS[kind];
      const send = async (): Promise<{ rid: string; sendUs: number; recvUs: number; status: number }> => {
        const sendUs = nowUs();
        const res = await fetch(`${sut.url}${spec.path}`, {
          method: spec.method,
          headers: {
            authorization: `Bearer ${account.key}`,
            ...(spec.body ? { "content-type": "application/json" } : {}),
            ...(spec.paid ? { "idempotency-key": randomUUID() } : {}),
          },
          ...(spec.body ? { body: spec.body(model) } : {}),
        });
        await res.arrayBuffer();
        return { rid: res.headers.get("x-request-id") ?? "", sendUs, recvUs: nowUs(), status: res.status };
      };
      for (let i = 0; i < 50; i++) await send();
      await new Promise((r) => setTimeout(r, 200));
      const firstUs = nowUs();
      const cpuBefore = cpuTicks(pidsOf);
      const sent: Awaited<ReturnType<typeof send>>[] = [];
      for (let i = 0; i < opts.requests; i++) {
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        sent.push(await send());
      }
      const cpuAfter = cpuTicks(pidsOf);
      windows.push({ label: `waterfall-${kind}`, startUs: firstUs, endUs: nowUs() });
      if (opts.profileDir && kind === kinds[0]) writeFileSync(path.join(opts.profileDir, "processes.json"), JSON.stringify(Object.fromEntries(pidsOf())));
      await new Promise((r) => setTimeout(r, 300));
      const lines = readLines(dir).filter((l) => l.marks[0]![1] >= firstUs);
      const byRid = new Map<string, Line[]>();
      for (const l of lines) if (l.rid && l.service !== "billing-ledger") byRid.set(l.rid, [...(byRid.get(l.rid) ?? []), l]);
      const billing = lines.filter((l) => l.service === "billing-ledger");
      const samples: Sample[] = sent.map((s) => {
        const at = new Map<string, number>([
          ["client.send", s.sendUs],
          ["client.recv", s.recvUs],
        ]);
        const own = [...(byRid.get(s.rid) ?? []), ...billing.filter((b) => b.marks[0]![1] >= s.sendUs && b.marks[0]![1] <= s.recvUs)];
        for (const l of own) for (const [m, t] of l.marks) at.set(`${l.service}.${m}`, t);
        return { at };
      });
      const statuses: Record<string, number> = {};
      for (const s of sent) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
      console.log(`\n${spec.method} ${spec.path}: statuses ${JSON.stringify(statuses)}, ${byRid.size} traced`);
      printMarks(samples);
      printSteps(samples);
      // Per request, so the pauses between requests (BENCH_WATERFALL_GAP_MS) are charged their idle timers too.
      const cpu = [...cpuAfter].map(([g, t]) => `${g} ${((1000 * (t - (cpuBefore.get(g) ?? 0))) / TICKS_PER_S / opts.requests).toFixed(2)}`);
      console.log(`  CPU ms per request (from /proc, 10 ms ticks): ${cpu.join(", ")}`);
    }
  } finally {
    await sut.close();
    rmSync(dir, { recursive: true, force: true });
  }
  if (opts.profileDir) {
    writeFileSync(path.join(opts.profileDir, "windows.json"), JSON.stringify(windows, null, 2));
    printProfileSummary(opts.profileDir, `waterfall-${kinds[0]}`);
  }
}

function readLines(dir: string): Line[] {
  const out: Line[] = [];
  for (const f of readdirSync(dir)) {
    for (const raw of readFileSync(path.join(dir, f), "utf8").split("\n")) if (raw) out.push(JSON.parse(raw) as Line);
  }
  return out;
}

/** Every mark by its median offset from the client's send, with the step from the mark before it. */
function printMarks(samples: Sample[]): void {
  const names = new Set(samples.flatMap((s) => [...s.at.keys()]));
  const rows = [...names]
    .map((n) => {
      const offsets = samples.filter((s) => s.at.has(n)).map((s) => (s.at.get(n)! - s.at.get("client.send")!) / 1000);
      return { n, p50: percentile(offsets, 50), seen: offsets.length };
    })
    .filter((r) => r.seen >= samples.length / 2)
    .sort((a, b) => a.p50 - b.p50);
  console.log("  mark                                           at p50 ms   +ms");
  let prev = 0;
  for (const r of rows) {
    console.log(`  ${r.n.padEnd(46)} ${r.p50.toFixed(3).padStart(9)} ${(r.p50 - prev).toFixed(3).padStart(7)}`);
    prev = r.p50;
  }
}

function printSteps(samples: Sample[]): void {
  console.log("\n  step                                                        p50 ms   p90 ms");
  for (const [label, from, to] of STEPS) {
    const d = samples.filter((s) => s.at.has(from) && s.at.has(to)).map((s) => (s.at.get(to)! - s.at.get(from)!) / 1000);
    if (d.length < samples.length / 2) continue;
    console.log(`  ${label.padEnd(58)} ${percentile(d, 50).toFixed(3).padStart(8)} ${percentile(d, 90).toFixed(3).padStart(8)}`);
  }
}
