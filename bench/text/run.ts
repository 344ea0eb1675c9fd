import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { FAKE_MODEL, PRICES } from "@meter/testing";
import type { RunFigures } from "./figures";
import { atRest, booksChecks, invariantChecks, killRun, measureKept, warmUp, type Check } from "./measure";
import { benchOptions, USAGE } from "./options";
import { printProfileSummary } from "./profile-summary";
import { startPortkey } from "./portkey";
import { printRuns, printTargets } from "./report";
import { startHelper, startStack, stopChild, stopStack, type Context, type Started } from "./stack";
import { runWaterfall } from "./waterfall";

/**
 * `pnpm bench:text`: one run, side by side, against the same fake upstream in its own process:
 *
 * - direct:    the load straight to the fake upstream;
 * - forwarder: a bare Express 5 + http-proxy-middleware forwarder in its own process in front of it
 *              (no auth, no billing: the floor any gateway of this design pays);
 * - portkey:   Portkey's AI gateway (`@portkey-ai/gateway` 1.15, from npm) as a plain proxy in front of
 *              it (OpenAI chat calls, `x-portkey-provider: openai`, the fake upstream as custom host): the
 *              peer our throughput is measured against (portkey.ts);
 * - metered:   the real system (billing-ledger, text and the gateway as real processes), POST
 *              /v1/messages with a fresh Idempotency-Key per request, spread over many organizations'
 *              keys; and `hot`: the same with every request from one organization's one key.
 *
 * Before every run the two databases (fresh for this bench) get a VACUUM ANALYZE: this machine's
 * PostgreSQL runs with autovacuum off. For each concurrency: req/s, p50/p90/p99 of the 2xx answers, answers by status, CPU seconds per 1,000
 * requests of every process (from /proc: gateway, text, billing-ledger, forwarder, upstream, this run's
 * PostgreSQL backends, RabbitMQ, the load generator), RSS per process. After each metered run every
 * request is brought to a final answer (each 202, and each request the load generator left unanswered
 * when it stopped, is retried with its key until final), every hold must be resolved and no text
 * request left unfinished. Then, unless BENCH_KILL=none: billing-ledger is SIGKILLed during a
 * concurrency-16 run and started again ~2 s later. At the end the books check, and a cross-check of
 * every text request against its hold (settled exactly once, for its cost; failed ones released).
 *
 * BENCH_PROVIDERS=failover gives the bench's model two providers: a second fake upstream failing every
 * other call (500, nothing ran: the request moves on), tried first, then the usual one.
 *
 * The settings are environment variables: `pnpm bench:text --help` (options.ts). The parts, in the
 * order a run takes them: stack.ts (the processes), measure.ts (warm-up, runs, kill run, checks) over
 * load.ts, cpu.ts and counters.ts, finalize.ts (every request final, the cross-check), report.ts.
 *
 * Exit code 1 when an invariant breaks: a 5xx other than 503 with Retry-After, a request left without a
 * final answer, a hold left active, the books check or the cross-check failing.
 */
async function main(): Promise<void> {
  if (process.argv.includes("--help")) {
    console.log(USAGE);
    return;
  }
  const opts = benchOptions();
  const { profileDir, levels, duration, orgCount } = opts;
  const nodeArgs = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  console.log(
    `bench:text: ${levels.join(", ")} connections, ${duration} s per run, ${orgCount} organizations; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const upstream = await startHelper("fake-upstream.process.ts", [], []);
  if (opts.waterfall) {
    try {
      await runWaterfall({
        ...opts.waterfall,
        upstreamUrl: upstream.info.anthropicBaseUrl!,
        upstreamPid: upstream.info.pid,
        ...(profileDir ? { profileDir } : {}),
      });
    } finally {
      await stopChild(upstream.child);
    }
    return;
  }
  const forwarder = await startHelper("forwarder.process.ts", [upstream.info.anthropicBaseUrl!], nodeArgs);
  const portkey = opts.targets.includes("portkey") ? await startPortkey(nodeArgs) : undefined;
  const flaky = opts.providers === "failover" ? await startHelper("fake-upstream.process.ts", ["--fail-every", "2"], []) : undefined;
  const started: Started = { clients: [] };
  const runs: RunFigures[] = [];
  const checks: Check[] = [];
  const windows: Context["windows"] = [];
  let idle: RunFigures["cpu"] = {};
  /** Runs measured again because other work disturbed them: not printed, but checked like the rest. */
  const discarded: RunFigures[] = [];
  try {
    const ctx = await startStack(started, { upstream, forwarder, portkey, orgCount, nodeArgs, profileDir, windows });
    if (flaky) await twoProviders(ctx, flaky.info.anthropicBaseUrl!, upstream.info.anthropicBaseUrl!);
    await warmUp(ctx, opts.targets);
    idle = await atRest(ctx);
    for (const c of levels) {
      for (const t of opts.targets) runs.push(await measureKept(ctx, t, c, opts, discarded));
    }
    checks.push(...(await booksChecks(ctx, "after the load runs")));
    if (opts.killMode === "billing") {
      runs.push(await killRun(ctx, opts));
      checks.push(...(await booksChecks(ctx, "after the kill run")));
    }
    checks.push(...invariantChecks([...runs, ...discarded]));
  } finally {
    printRuns(runs);
    console.log("\nChecks");
    for (const c of checks) console.log(`  ${c.ok ? "ok  " : "FAIL"} ${c.name}${c.detail ? `: ${c.detail}` : ""}`);
    printTargets(runs, levels);
    if (checks.some((c) => !c.ok)) process.exitCode = 1;
    const { jsonPath } = opts;
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
    await stopStack(started);
    await stopChild(forwarder.child);
    if (portkey) await stopChild(portkey.child);
    await stopChild(upstream.child);
    if (flaky) await stopChild(flaky.child);
    if (profileDir) {
      writeFileSync(path.join(profileDir, "windows.json"), JSON.stringify(windows, null, 2));
      printProfileSummary(profileDir);
    }
  }
}

/** The bench's model on two providers: the failing one first (priority 0), the usual one behind it. */
async function twoProviders(ctx: Context, flakyUrl: string, upstreamUrl: string): Promise<void> {
  const provider = (url: string, priority: number) => ({ kind: "anthropic", base_url: url, api_key_env: "FAKE_UPSTREAM_API_KEY", priority });
  await ctx.sut.admin("PUT", `/admin/v1/models/${FAKE_MODEL}`, {
    enabled: true,
    providers: [provider(flakyUrl, 0), provider(upstreamUrl, 1)],
    operations: { text: PRICES },
  });
  // The text service reloads the catalog at once on the change event, else within CATALOG_REFRESH_MS.
  await new Promise((r) => setTimeout(r, 2_500));
  console.log(`bench:text: ${FAKE_MODEL} on two providers, ${flakyUrl} (every other call 500) first`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
