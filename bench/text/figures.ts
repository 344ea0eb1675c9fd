/** What one run measured, as printed and written to the JSON figures; and the small helpers they share. */

export type Target = "direct" | "forwarder" | "portkey" | "metered" | "hot";
export const SERVICES = ["gateway", "text", "billing-ledger"] as const;
/** Process groups charged with CPU, in print order. */
export const GROUPS = ["gateway", "text", "billing-ledger", "forwarder", "portkey", "upstream", "postgres", "rabbitmq", "redis", "loadgen"] as const;
export type Group = (typeof GROUPS)[number] | "pg-all";

export interface Latency {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface RunFigures {
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

export interface FinalFigures {
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

export interface OutageFigures {
  killedAtS: number;
  readyAtS: number;
  /** Answers from the kill to 1 s after billing-ledger was ready again, and all the others of the run. */
  during: Record<string, number>;
  otherwise: Record<string, number>;
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
