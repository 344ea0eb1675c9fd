import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * Summarizes the V8 CPU profiles (`--cpu-prof`) that `BENCH_PROFILE_DIR=... pnpm bench:text` leaves:
 * for each process, over the time window of one run (the samples' timestamps and the run's window are
 * both on the machine's monotonic clock), the top functions by self time, self time by module
 * (package, Node internals, the repository's own folders), and the share of samples with a module
 * anywhere on the stack (inclusive). Standalone: `tsx bench/text/profile-summary.ts <dir> [run label, e.g. metered@16]`.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const SPECIAL = new Set(["(idle)", "(garbage collector)", "(program)", "(root)"]);

/** What a frame belongs to: a package, a Node internal module, a folder of this repository, or V8/native. */
export function moduleOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (SPECIAL.has(functionName)) return functionName;
  if (!url) return "(native/V8)";
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pnpm) return pnpm[1]!;
  const plain = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (plain) return plain[1]!;
  if (url.startsWith("node:"))
    return url
      .replace(/^node:(internal\/)?/, "node:")
      .split("/")
      .slice(0, 2)
      .join("/");
  const repo = /\/work\/[^/]+\/((?:services|packages)\/[^/]+|gateway|bench)\/(?:src\/)?(.*)$/.exec(url);
  if (repo) return `${repo[1]}/${repo[2]}`;
  return url;
}

function shortUrl(url: string): string {
  return url
    .replace(/^file:\/\//, "")
    .replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, "")
    .replace(/^\/work\/[^/]+\//, "");
}

export interface ProcessProfile {
  process: string;
  windowMs: number;
  busyMs: number;
  idleMs: number;
  topSelf: { name: string; ms: number; pctBusy: number }[];
  selfByModule: { module: string; ms: number; pctBusy: number }[];
  inclusiveByModule: { module: string; ms: number; pctBusy: number }[];
  /** The repository's own functions (and the packages' entry points called from them) by time with them on the stack. */
  inclusiveRepoFunctions: { name: string; ms: number; pctBusy: number }[];
}

export function summarizeProfile(file: string, window: { startUs: number; endUs: number } | undefined, processName: string, top = 20): ProcessProfile {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (window && (t < window.startUs || t > window.endUs)) continue;
    // A sample stands for the time until the next one.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + dt);
  }
  let idleUs = 0;
  let busyUs = 0;
  const fnSelf = new Map<string, number>();
  const modSelf = new Map<string, number>();
  const modIncl = new Map<string, number>();
  const repoIncl = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const fr = node.callFrame;
    if (fr.functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const name = SPECIAL.has(fr.functionName)
      ? fr.functionName
      : `${fr.functionName || "(anonymous)"} ${fr.url ? `${shortUrl(fr.url)}:${fr.lineNumber + 1}` : "(native)"}`;
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + us);
    const mod = moduleOf(fr);
    modSelf.set(mod, (modSelf.get(mod) ?? 0) + us);
    const onStack = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) onStack.add(moduleOf(byId.get(n)!.callFrame));
    for (const m of onStack) modIncl.set(m, (modIncl.get(m) ?? 0) + us);
    const frames = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const f = byId.get(n)!.callFrame;
      if (/\/work\/[^/]+\/(services|packages|gateway)\//.test(f.url) && !f.url.includes("node_modules") && f.functionName) {
        frames.add(`${f.functionName} ${shortUrl(f.url)}:${f.lineNumber + 1}`);
      }
    }
    for (const f of frames) repoIncl.set(f, (repoIncl.get(f) ?? 0) + us);
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({ k, ms: us / 1000, pctBusy: (100 * us) / Math.max(busyUs, 1) }));
  const windowMs = window ? (window.endUs - window.startUs) / 1000 : (profile.endTime - profile.startTime) / 1000;
  return {
    process: processName,
    windowMs,
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    topSelf: rank(fnSelf).map(({ k, ...r }) => ({ name: k, ...r })),
    selfByModule: rank(modSelf).map(({ k, ...r }) => ({ module: k, ...r })),
    inclusiveRepoFunctions: rank(repoIncl).map(({ k, ...r }) => ({ name: k, ...r })),
    inclusiveByModule: rank(modIncl)
      .filter((r) => r.k !== "(root)")
      .map(({ k, ...r }) => ({ module: k, ...r })),
  };
}

/** Every profile in `dir`, over the window of the run `label` (default: the first metered run). */
export function printProfileSummary(dir: string, label?: string, top = 20): ProcessProfile[] {
  const windowsFile = path.join(dir, "windows.json");
  const windows = existsSync(windowsFile) ? (JSON.parse(readFileSync(windowsFile, "utf8")) as { label: string; startUs: number; endUs: number }[]) : [];
  const window = label ? windows.find((w) => w.label === label) : (windows.find((w) => w.label.startsWith("metered@")) ?? windows[0]);
  const processesFile = path.join(dir, "processes.json");
  const processes = existsSync(processesFile) ? (JSON.parse(readFileSync(processesFile, "utf8")) as Record<string, number[]>) : {};
  const nameOf = (pid: number) => Object.entries(processes).find(([, pids]) => pids.includes(pid))?.[0] ?? `pid ${pid}`;
  const out: ProcessProfile[] = [];
  console.log(`\nCPU profiles in ${dir}, window ${window ? `${window.label} (${((window.endUs - window.startUs) / 1e6).toFixed(1)} s)` : "whole profile"}`);
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const pid = Number(file.split(".")[3]);
    const s = summarizeProfile(path.join(dir, file), window, nameOf(pid), top);
    out.push(s);
    console.log(
      `\n== ${s.process} (${file}): busy ${s.busyMs.toFixed(0)} ms of ${s.windowMs.toFixed(0)} ms (${((100 * s.busyMs) / s.windowMs).toFixed(0)} % of a core)`,
    );
    console.log("  top self time:");
    for (const r of s.topSelf) console.log(`    ${r.pctBusy.toFixed(1).padStart(5)} %  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`);
    console.log("  self time by module:");
    for (const r of s.selfByModule.slice(0, 14)) console.log(`    ${r.pctBusy.toFixed(1).padStart(5)} %  ${r.module}`);
    console.log("  on the stack (inclusive) by module:");
    for (const r of s.inclusiveByModule.slice(0, 20)) console.log(`    ${r.pctBusy.toFixed(1).padStart(5)} %  ${r.module}`);
    console.log("  the repository's named functions on the stack (inclusive):");
    for (const r of s.inclusiveRepoFunctions.slice(0, 25)) console.log(`    ${r.pctBusy.toFixed(1).padStart(5)} %  ${r.name}`);
  }
  return out;
}

if (require.main === module) {
  const [dir, label] = process.argv.slice(2);
  if (!dir) {
    console.error("usage: tsx bench/text/profile-summary.ts <profile dir> [run label, e.g. metered@16]");
    process.exit(2);
  }
  printProfileSummary(path.resolve(dir), label);
}
