import path from "node:path";
import type { Target } from "./figures";

/** `pnpm bench:text --help`: the settings, all from the environment. */
export const USAGE = `pnpm bench:text: the text path side by side (direct, forwarder, portkey, metered, hot); see bench/text/run.ts.

Env:
  BENCH_DURATION_S     seconds per run (10)
  BENCH_CONNECTIONS    concurrency levels ("1,16,64,256"; "16" when profiling)
  BENCH_TARGETS        which runs ("direct,forwarder,portkey,metered,hot"; portkey: Portkey's gateway 1.15
                       from npm as a plain proxy to the same fake upstream)
  BENCH_ORGS           organizations (each with one key) the metered load is spread over (64)
  BENCH_KILL           "billing" (default; "none" when profiling) or "none"
  BENCH_PROVIDERS      "single" (default: the bench's model has one provider) or "failover": two
                       providers, the first a second fake upstream answering every other call 500
                       (tried first), the second the usual one (docs/benchmarks.md, "Two providers")
  BENCH_PROFILE_DIR    run every service, the forwarder and Portkey with --cpu-prof into this folder, and
                       summarize the profiles over each run's window at the end
  BENCH_JSON           where the figures go as JSON (bench/text/last-run.json, git-ignored)
  BENCH_WATERFALL      n: instead of the load runs, the c=1 waterfall of n sequential requests of each kind
                       (bench/text/waterfall.ts): every mark of the gateway, text and billing-ledger on one
                       time axis, and each step's p50/p90. BENCH_WATERFALL_MODEL picks the model (the fake upstream's),
                       BENCH_WATERFALL_KINDS the requests ("messages,quote,models"), BENCH_WATERFALL_GAP_MS a pause
                       before each request (the previous one's tail then over); with BENCH_PROFILE_DIR, CPU profiles
  BENCH_QUIET_CORES    on a shared machine: before each run, wait (up to 3 minutes) until the
                       machine's CPU outside this benchmark is below this many cores, and run again
                       (up to twice) a run during which other work took more than that. Default 0.3;
                       "off" disables both.

Exit code 1 when an invariant breaks: a 5xx other than 503 with Retry-After, a request left without a
final answer, a hold left active, the books check or the cross-check failing.`;

export interface BenchOptions {
  profileDir: string | undefined;
  /** Seconds per run. */
  duration: number;
  levels: number[];
  targets: Target[];
  orgCount: number;
  killMode: string;
  providers: "single" | "failover";
  jsonPath: string;
  /** Undefined: runs are not held back for (or repeated after) other work on the machine. */
  quietCores: number | undefined;
  /** Set: the c=1 waterfall instead of the load runs. */
  waterfall: { requests: number; model?: string; kinds?: ("messages" | "quote" | "models")[]; gapMs?: number } | undefined;
}

export function benchOptions(env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const profileDir = env.BENCH_PROFILE_DIR ? path.resolve(env.BENCH_PROFILE_DIR) : undefined;
  return {
    profileDir,
    duration: Number(env.BENCH_DURATION_S ?? 10),
    levels: (env.BENCH_CONNECTIONS ?? (profileDir ? "16" : "1,16,64,256")).split(",").map(Number),
    targets: (env.BENCH_TARGETS ?? "direct,forwarder,portkey,metered,hot").split(",") as Target[],
    orgCount: Number(env.BENCH_ORGS ?? 64),
    killMode: env.BENCH_KILL ?? (profileDir ? "none" : "billing"),
    providers: env.BENCH_PROVIDERS === "failover" ? "failover" : "single",
    jsonPath: env.BENCH_JSON ?? path.join(__dirname, "last-run.json"),
    quietCores: env.BENCH_QUIET_CORES === "off" ? undefined : Number(env.BENCH_QUIET_CORES ?? 0.3),
    waterfall: env.BENCH_WATERFALL
      ? {
          requests: Number(env.BENCH_WATERFALL),
          ...(env.BENCH_WATERFALL_MODEL ? { model: env.BENCH_WATERFALL_MODEL } : {}),
          ...(env.BENCH_WATERFALL_KINDS ? { kinds: env.BENCH_WATERFALL_KINDS.split(",") as ("messages" | "quote" | "models")[] } : {}),
          ...(env.BENCH_WATERFALL_GAP_MS ? { gapMs: Number(env.BENCH_WATERFALL_GAP_MS) } : {}),
        }
      : undefined,
  };
}
