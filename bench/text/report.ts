import { GROUPS, type Group, type RunFigures, type Target } from "./figures";

/** The tables printed at the end of a run, and the verdicts on the targets. */

export const f0 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(0));
export const f1 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(1));
export const f2 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(2));
export const statusText = (s: Record<string, number>) =>
  Object.entries(s)
    .filter(([k]) => !k.startsWith("2") || k === "202")
    .map(([k, v]) => `${k}:${v}`)
    .join(" ") || "0";

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function printRuns(runs: RunFigures[]): void {
  const forwarderAt = new Map(runs.filter((r) => r.target === "forwarder").map((r) => [r.connections, r]));
  const directAt = new Map(runs.filter((r) => r.target === "direct").map((r) => [r.connections, r]));
  const portkeyAt = new Map(runs.filter((r) => r.target === "portkey").map((r) => [r.connections, r]));
  console.log("\nThroughput and latency (latency of the 2xx answers; non-2xx by status; 202 counted apart)");
  console.log(
    table(
      [
        "target",
        "conc",
        "req/s",
        "x fwd",
        "x portkey",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "+p50 vs direct",
        "non-2xx",
        "errors",
        "busy cores",
        "other cores",
        "load1",
      ],
      runs.map((r) => [
        r.target,
        String(r.connections),
        f0(r.rps),
        forwarderAt.get(r.connections) ? f2(r.rps / forwarderAt.get(r.connections)!.rps) : "-",
        portkeyAt.get(r.connections) ? f2(r.rps / portkeyAt.get(r.connections)!.rps) : "-",
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

export function printTargets(runs: RunFigures[], levels: readonly number[]): void {
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
    lines.push(`c1 added p50 over direct = ${f2(added)} ms (target <= 4.0 ms): ${verdict(added <= 4)}`);
  }
  const p1 = at("portkey", 1);
  if (p1 && d1) lines.push(`c1 Portkey's added p50 over direct = ${f2(p1.latency.p50 - d1.latency.p50)} ms (for comparison)`);
  for (const c of levels) {
    const m = at("metered", c);
    const p = at("portkey", c);
    if (m && p) {
      const ratio = m.rps / p.rps;
      lines.push(`c${c} metered / Portkey = ${f2(ratio)}${c === 16 ? ` (target >= 0.80): ${verdict(ratio >= 0.8)}` : ""}`);
    }
  }
  if (m16) {
    // Every process, the fake upstream and the load generator included: the issue's 9.7 ms was that sum.
    const groups: Group[] = ["gateway", "text", "billing-ledger", "upstream", "postgres", "rabbitmq", "redis", "loadgen"];
    const ms = groups.reduce((sum, g) => sum + (m16.cpu[g]?.perKReq ?? 0), 0);
    lines.push(`c16 CPU per paid request, all processes = ${f2(ms)} ms (target <= 4 ms): ${verdict(ms <= 4)}`);
  }
  for (const c of levels) {
    const h = at("hot", c);
    const m = at("metered", c);
    if (h && m) lines.push(`c${c} one hot organization / many = ${f2(h.rps / m.rps)} (target >= 0.80): ${verdict(h.rps / m.rps >= 0.8)}`);
  }
  if (lines.length > 0) console.log(`\nTargets (issues 23 and 43)\n${lines.map((l) => `  ${l}`).join("\n")}`);
}
