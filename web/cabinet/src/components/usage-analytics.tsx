import { useEffect, useRef, useState } from "preact/hooks";
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from "chart.js";
import type { AnalyticsFigures, AnalyticsGroup, AnalyticsReport } from "@meter/contracts";
import { api, query } from "../api";
import { useI18n } from "../i18n/locale";
import type { Messages } from "../i18n/messages.en";
import { formatRubles, MICRORUB_PER_RUB } from "../lib/money";
import { formatDateTime, formatDay, userTimeZone } from "../lib/time";
import { Amount } from "./amount";
import { DataTable } from "./data-table";
import { ChoiceFilter, CsvLink } from "./filters";
import { ErrorNotice } from "./notice";
import { PALETTE } from "./spend-chart";
import { useLoad } from "./use-load";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

type Measure = "requests" | "tokens" | "cost" | "errors";
const MEASURES: Measure[] = ["requests", "errors", "tokens", "cost"];

function valueOf(f: AnalyticsFigures, m: Measure): number {
  switch (m) {
    case "requests":
      return f.requests;
    case "errors":
      return f.failed + f.refused;
    case "tokens":
      return f.input_tokens + f.output_tokens;
    case "cost":
      return f.cost_microrub;
  }
}

function groupName(g: AnalyticsGroup, groupBy: AnalyticsReport["group_by"], t: Messages): string {
  if (g.key) return g.key.name ?? g.key.id.slice(0, 8);
  if (groupBy === "model") return g.model ?? t.analytics.noModel;
  return t.analytics.all;
}

/**
 * Requests, errors, tokens and spend over time (docs/api.md "Analytics"): per hour of a day or per
 * budget day of a range, grouped by key or by model, as a stacked bar chart with the same figures in a
 * table (the canvas is a picture to assistive technology), and their CSV. `base` is the API path of
 * the report (its CSV is `base.csv`).
 */
export function UsageAnalytics({ base, resetOn, headingId }: { base: string; resetOn: unknown; headingId: string }) {
  const { t, tag } = useI18n();
  const [granularity, setGranularity] = useState<"day" | "hour">("day");
  const [groupBy, setGroupBy] = useState<"none" | "key" | "model">("model");
  const [measure, setMeasure] = useState<Measure>("requests");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const params = { granularity, group_by: groupBy, from: from || undefined, to: to || undefined };
  const report = useLoad(() => api<AnalyticsReport>("GET", `${base}${query(params)}`), [base, resetOn, granularity, groupBy, from, to]);
  const n = (x: number) => new Intl.NumberFormat(tag).format(x);
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{t.analytics.heading}</h2>
      <form class="filters" aria-label={t.analytics.form} onSubmit={(e) => e.preventDefault()}>
        <ChoiceFilter
          label={t.analytics.granularity}
          name="granularity"
          value={granularity}
          any={t.analytics.day}
          options={[{ value: "hour" as const, label: t.analytics.hour }]}
          onChange={(v) => setGranularity(v || "day")}
        />
        <ChoiceFilter
          label={t.analytics.groupBy}
          name="group_by"
          value={groupBy === "none" ? "" : groupBy}
          any={t.analytics.groups.none!}
          options={(["key", "model"] as const).map((g) => ({ value: g, label: t.analytics.groups[g]! }))}
          onChange={(v) => setGroupBy(v || "none")}
        />
        <ChoiceFilter
          label={t.analytics.measure}
          name="measure"
          value={measure === "requests" ? "" : measure}
          any={t.analytics.measures.requests!}
          options={MEASURES.slice(1).map((m) => ({ value: m, label: t.analytics.measures[m]! }))}
          onChange={(v) => setMeasure(v || "requests")}
        />
        <label>
          {t.analytics.from}
          <input type="date" name="from" value={from} max={to || undefined} onChange={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          {t.analytics.to}
          <input type="date" name="to" value={to} min={from || undefined} onChange={(e) => setTo(e.currentTarget.value)} />
        </label>
        <CsvLink href={`/cabinet/api${base}.csv${query(params)}`} title={t.analytics.csvTitle} />
      </form>
      <ErrorNotice error={report.error} />
      {report.data && (
        <p data-testid="analytics-totals">
          {t.analytics.totals(n(report.data.totals.requests), n(report.data.totals.failed + report.data.totals.refused))};{" "}
          <Amount microrub={report.data.totals.cost_microrub} />
        </p>
      )}
      {report.data && <AnalyticsChart report={report.data} measure={measure} />}
    </section>
  );
}

function AnalyticsChart({ report, measure }: { report: AnalyticsReport; measure: Measure }) {
  const { t, tag } = useI18n();
  const canvas = useRef<HTMLCanvasElement>(null);
  const zone = userTimeZone();
  const label = (b: string) => (report.granularity === "day" ? formatDay(b, tag) : formatDateTime(b, zone, tag).replace(/:\d\d$/, ""));
  const show = (v: number) => (measure === "cost" ? formatRubles(v, tag) : new Intl.NumberFormat(tag).format(v));
  const what = t.analytics.measures[measure]!;
  const total = report.groups.reduce((s, g) => s + valueOf(g.totals, measure), 0);
  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, {
      type: "bar",
      data: {
        labels: report.buckets.map(label),
        datasets: report.groups.map((g, i) => ({
          label: groupName(g, report.group_by, t),
          data: g.points.map((p) => (measure === "cost" ? valueOf(p, measure) / MICRORUB_PER_RUB : valueOf(p, measure))),
          backgroundColor: PALETTE[i % PALETTE.length],
          stack: "usage",
        })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, grid: { display: false } },
          y: {
            stacked: true,
            beginAtZero: true,
            ticks: {
              callback: (v) =>
                measure === "cost" ? formatRubles(Math.round(Number(v) * MICRORUB_PER_RUB), tag) : new Intl.NumberFormat(tag).format(Number(v)),
            },
          },
        },
        plugins: { legend: { position: "bottom" } },
      },
    });
    return () => chart.destroy();
  }, [report, measure, tag]);
  const rows = report.buckets.flatMap((b, i) => report.groups.map((g) => ({ bucket: b, group: g, f: g.points[i]! }))).filter((r) => r.f.requests > 0);
  const c = t.analytics.columns;
  return (
    <figure class="chart" data-testid="analytics-chart" data-measure={measure} data-total={String(total)}>
      <figcaption>
        {t.analytics.caption(what, label(report.buckets[0]!), label(report.buckets.at(-1)!), report.granularity === "day" ? report.timezone : zone)}
      </figcaption>
      <div class="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={t.analytics.chartLabel(what, show(total))} />
      </div>
      <details>
        <summary>{t.analytics.table}</summary>
        <DataTable
          testId="analytics-table"
          columns={[
            c.bucket,
            c.group,
            { label: c.requests, num: true },
            { label: c.refused, num: true },
            { label: c.failed, num: true },
            { label: c.tokens, num: true },
            { label: c.cost, num: true },
          ]}
          rows={rows}
          empty={t.analytics.nothing}
          row={(r) => (
            <tr key={`${r.bucket}-${r.group.key?.id ?? ""}-${r.group.model ?? ""}`}>
              <td>{label(r.bucket)}</td>
              <td>{groupName(r.group, report.group_by, t)}</td>
              <td class="num">{r.f.requests}</td>
              <td class="num">{r.f.refused}</td>
              <td class="num">{r.f.failed}</td>
              <td class="num">{r.f.input_tokens + r.f.output_tokens}</td>
              <td class="num">
                <Amount microrub={r.f.cost_microrub} />
              </td>
            </tr>
          )}
        />
      </details>
    </figure>
  );
}
