import path from "node:path";
import { repoRoot } from "@meter/local-infra";
import { allProcesses, machineTicks, memoryOf, TICKS_PER_S } from "./proc";
import { sleep, SERVICES, type Group, type RunFigures } from "./figures";

/** CPU ticks per process group from /proc, taken before and after a run, and what they come to per request. */

/** The processes of a run that are not the services: found by pid (the stack's Context is one). */
export interface MeasuredPids {
  upstreamPid: number;
  forwarderPid: number;
  portkeyPid: number | undefined;
  /** The run's databases: their PostgreSQL backends are the `postgres` group. */
  dbNames: string[];
}

export type Snapshot = { ticks: Map<number, number>; groups: Map<Group, number[]>; machine: { busy: number; total: number }; at: number };

export function snapshot(ctx: MeasuredPids): Snapshot {
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
    if (p.pid === ctx.portkeyPid) add("portkey", p.pid);
    if (p.pid === process.pid) add("loadgen", p.pid);
    if (p.comm === "postgres") {
      add("pg-all", p.pid);
      if (ctx.dbNames.some((n) => p.cmdline.includes(` ${n} `))) add("postgres", p.pid);
    }
    if (p.comm === "beam.smp") add("rabbitmq", p.pid);
    // The gateway's key limits; like RabbitMQ, the machine's one, so other work on it counts here too.
    if (p.comm === "redis-server") add("redis", p.pid);
  }
  return { ticks, groups, machine: machineTicks(), at: performance.now() };
}

export function cpuBetween(
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

/**
 * Waits until the CPU the machine spends outside this benchmark's processes (other people's tests, a
 * build...) stays below `cores` for 2 s, or `maxS` pass. Returns the seconds waited.
 */
export async function waitQuiet(ctx: MeasuredPids, cores: number, maxS = 180): Promise<number> {
  const started = performance.now();
  for (;;) {
    const before = snapshot(ctx);
    await sleep(2000);
    const { machine } = cpuBetween(before, snapshot(ctx), 0);
    if (machine.otherCores < cores || performance.now() - started > maxS * 1000) return (performance.now() - started) / 1000;
  }
}
