import type { SpendReport } from "@meter/contracts";

export interface SpendSeries {
  /** "model · operation" */
  label: string;
  model: string;
  operation: string;
  /** microrub per day, aligned with the report's days */
  perDay: number[];
  total: number;
}

/** The chart's stacks: one series per model and operation, biggest spender first, days in order. */
export function spendSeries(report: SpendReport): { series: SpendSeries[]; total: number } {
  const index = new Map(report.days.map((d, i) => [d, i]));
  const byKey = new Map<string, SpendSeries>();
  for (const p of report.data) {
    const key = `${p.model}\u0000${p.operation}`;
    let s = byKey.get(key);
    if (!s) {
      s = { label: `${p.model} · ${p.operation}`, model: p.model, operation: p.operation, perDay: report.days.map(() => 0), total: 0 };
      byKey.set(key, s);
    }
    const i = index.get(p.day);
    if (i === undefined) continue;
    s.perDay[i]! += p.amount_microrub;
    s.total += p.amount_microrub;
  }
  const series = [...byKey.values()].sort((a, b) => b.total - a.total || a.label.localeCompare(b.label));
  return { series, total: series.reduce((sum, s) => sum + s.total, 0) };
}
