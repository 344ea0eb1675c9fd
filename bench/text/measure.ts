import { counters, perRequest } from "./counters";
import { cpuBetween, snapshot, waitQuiet } from "./cpu";
import { sleep, GROUPS, type RunFigures, type Target } from "./figures";
import { crossCheck, finalize } from "./finalize";
import { load } from "./load";
import { f0, f1, f2, statusText } from "./report";
import type { Context } from "./stack";

/**
 * The measured runs, in the order run.ts makes them: a warm-up, the system at rest, one kept run per
 * target and concurrency (run again when other work on the machine disturbed it), the books checked,
 * and the run with billing-ledger killed half-way.
 */

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * VACUUM ANALYZE of the run's two databases (made fresh for this bench). This machine's PostgreSQL runs
 * with autovacuum off, so without it every run would read the dead rows of the runs before it.
 */
export async function vacuum(ctx: Context): Promise<void> {
  await ctx.textDb.query("VACUUM ANALYZE");
  await ctx.billingDb.query("VACUUM ANALYZE");
}

/** Warms up connection pools, the JIT, the key and catalog caches; the windows of the warm-up are dropped. */
export async function warmUp(ctx: Context, targets: readonly Target[]): Promise<void> {
  for (const t of targets) {
    const w = await load(ctx, t, 8, 3);
    if (w.final === undefined && (t === "metered" || t === "hot")) await finalize(ctx, w.tracking);
  }
  ctx.windows.length = 0;
}

/**
 * What the system burns with no load at all (timers: reconciler, relay, catalog reload, heartbeats,
 * key cache...): at low rates it is charged to few requests.
 */
export async function atRest(ctx: Context): Promise<RunFigures["cpu"]> {
  const restBefore = snapshot(ctx);
  await sleep(5000);
  const idle = cpuBetween(restBefore, snapshot(ctx), 0).cpu;
  console.log(`at rest (no load, 5 s), share of one core: ${GROUPS.map((g) => `${g} ${f2(idle[g]?.cores ?? 0)}`).join(", ")}`);
  return idle;
}

/**
 * One target at one concurrency: run (up to three times when `quietCores` is set, keeping the run least
 * disturbed by other work), each metered run's requests brought to a final answer. The runs not kept
 * go to `discarded`, checked like the rest but not printed.
 */
export async function measureKept(
  ctx: Context,
  t: Target,
  c: number,
  opts: { duration: number; quietCores: number | undefined },
  discarded: RunFigures[],
): Promise<RunFigures> {
  const { windows } = ctx;
  const metered = t === "metered" || t === "hot";
  let best: RunFigures | undefined;
  let waited = 0;
  for (let attempt = 1; attempt <= (opts.quietCores === undefined ? 1 : 3); attempt++) {
    await vacuum(ctx);
    if (opts.quietCores !== undefined) waited += await waitQuiet(ctx, opts.quietCores);
    const countersBefore = metered ? await counters(ctx) : undefined;
    const r = await load(ctx, t, c, opts.duration);
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
    if (opts.quietCores === undefined || figures.machine.otherCores < opts.quietCores) break;
    console.log(`  (${t} c=${c}: other work took ${f2(figures.machine.otherCores)} cores during the run; running it again)`);
    if (figures.final && (figures.final.unresolved > 0 || figures.final.activeHolds > 0 || figures.final.unfinishedTextRequests > 0)) break;
    if (Object.keys(figures.bad5xx).length > 0) break;
  }
  const r = best!;
  console.log(
    `${t.padEnd(9)} c=${String(c).padEnd(3)} ${f0(r.rps).padStart(6)} req/s  p50 ${f2(r.latency.p50)} ms  p99 ${f2(r.latency.p99)} ms  non-2xx ${statusText(r.statuses)}  busy ${f2(r.machine.busyCores)} cores (other work ${f2(r.machine.otherCores)})`,
  );
  return r;
}

/** The books check and the cross-check of every text request against its hold, `when` named in the checks. */
export async function booksChecks(ctx: Context, when: string): Promise<Check[]> {
  const books = ctx.sut.booksCheck();
  const cross = await crossCheck(ctx);
  return [
    { name: `books check ${when}`, ok: books.ok, detail: books.output.trim().split("\n").slice(-1)[0] ?? "" },
    { name: `cross-check ${when}`, ok: cross.ok, detail: `${cross.completed} completed, ${cross.failed} failed; ${JSON.stringify(cross.problems)}` },
  ];
}

/** billing-ledger SIGKILLed 3 s into a c=16 run and started again 2 s later; the answers during the outage apart. */
export async function killRun(ctx: Context, opts: { duration: number; quietCores: number | undefined }): Promise<RunFigures> {
  const killC = 16;
  const killS = Math.max(opts.duration, 10);
  let runStart = 0;
  let killedAt = 0;
  let readyAt = 0;
  await vacuum(ctx);
  if (opts.quietCores !== undefined) await waitQuiet(ctx, opts.quietCores);
  console.log(`\nkill run: c=${killC} for ${killS} s; billing-ledger SIGKILLed at 3 s, started again 2 s later`);
  const r = await load(ctx, "kill", killC, killS, {
    during: async (startedAt) => {
      runStart = startedAt;
      await sleep(3000);
      killedAt = performance.now();
      await ctx.sut.system.kill("billing-ledger", "SIGKILL");
      await sleep(2000);
      await ctx.sut.system.start("billing-ledger");
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
  console.log(
    `kill      c=${killC}  ${f0(r.rps).padStart(6)} req/s  statuses ${JSON.stringify(r.statuses)}; killed at ${f1(r.outage.killedAtS)} s, ready again at ${f1(r.outage.readyAtS)} s; during the outage (to 1 s after): ${JSON.stringify(during)}`,
  );
  return figures;
}

/** The invariants over every run, kept or discarded: no 5xx but load shed, every request final, every hold resolved. */
export function invariantChecks(runs: readonly RunFigures[]): Check[] {
  const checks: Check[] = [];
  for (const r of runs) {
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
  return checks;
}
