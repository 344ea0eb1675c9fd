import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time and memory of processes, read from /proc (Linux): utime + stime of /proc/<pid>/stat in clock
 * ticks, VmRSS and VmHWM of /proc/<pid>/status. Used by `pnpm bench:text` to charge each process its
 * CPU seconds per 1,000 requests.
 */
export const TICKS_PER_S = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export interface ProcInfo {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
  /** utime + stime, in clock ticks. */
  ticks: number;
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

export function procInfo(pid: number): ProcInfo | undefined {
  const stat = readOrUndefined(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  const comm = stat.slice(open + 1, close);
  // Fields from the 3rd (state) on: ppid is the 4th field, utime the 14th, stime the 15th.
  const rest = stat.slice(close + 2).split(" ");
  const cmdline = (readOrUndefined(`/proc/${pid}/cmdline`) ?? "").replace(/\0/g, " ").trim();
  return { pid, ppid: Number(rest[1]), comm, cmdline, ticks: Number(rest[11]) + Number(rest[12]) };
}

/** Every process on the machine (those that vanish while being read are left out). */
export function allProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const info = procInfo(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/** Resident memory now and at its peak, in MiB; RssAnon (private memory) too, for processes that share memory (PostgreSQL). */
export function memoryOf(pid: number): { rssMiB: number; hwmMiB: number; anonMiB: number } | undefined {
  const status = readOrUndefined(`/proc/${pid}/status`);
  if (!status) return undefined;
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rssMiB: kb("VmRSS") / 1024, hwmMiB: kb("VmHWM") / 1024, anonMiB: kb("RssAnon") / 1024 };
}

/** The whole machine's CPU time, in ticks: busy (everything but idle and iowait) and total. */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return { busy: total - idle, total };
}
