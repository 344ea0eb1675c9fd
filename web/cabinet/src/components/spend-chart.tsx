import { useEffect, useRef } from "preact/hooks";
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from "chart.js";
import type { SpendReport } from "@meter/contracts";
import { exactRubleDigits, formatRubles, MICRORUB_PER_RUB } from "../lib/money";
import { spendSeries } from "../lib/spend-series";
import { formatDay } from "../lib/time";
import { useI18n } from "../i18n/locale";
import { Amount } from "./amount";
import { DataTable } from "./data-table";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

/** Distinguishable on white (each at least 3:1 against it, as WCAG asks of graphics) and for common colour blindness. */
export const PALETTE = ["#0b5cad", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0f766e", "#a16207", "#be185d", "#4338ca", "#525252"];

/**
 * Spend per budget day, stacked by model and operation. The canvas is a picture to assistive technology,
 * so the same figures follow as a table (collapsed), which is also what a keyboard user reads exactly.
 */
export function SpendChart({ report }: { report: SpendReport }) {
  const { t, tag } = useI18n();
  const canvas = useRef<HTMLCanvasElement>(null);
  const { series, total } = spendSeries(report);

  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, {
      type: "bar",
      data: {
        labels: report.days.map((d) => formatDay(d, tag)),
        datasets: series.map((s, i) => ({
          label: s.label,
          // The chart draws in rubles; exact figures are in the tooltip and the table.
          data: s.perDay.map((m) => m / MICRORUB_PER_RUB),
          backgroundColor: PALETTE[i % PALETTE.length],
          stack: "spend",
        })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, grid: { display: false } },
          y: { stacked: true, beginAtZero: true, ticks: { callback: (v) => formatRubles(Math.round(Number(v) * MICRORUB_PER_RUB), tag) } },
        },
        plugins: {
          legend: { position: "bottom" },
          tooltip: {
            callbacks: {
              label: (ctx) => {
                const s = series[ctx.datasetIndex];
                const microrub = s?.perDay[ctx.dataIndex] ?? 0;
                return `${ctx.dataset.label ?? ""}: ${formatRubles(microrub, tag)} (${exactRubleDigits(microrub)} ₽)`;
              },
            },
          },
        },
      },
    });
    return () => chart.destroy();
  }, [report, tag]);

  const rows = report.data.filter((p) => p.amount_microrub > 0);
  return (
    <figure class="chart" data-testid="spend-chart" data-total-microrub={String(total)}>
      <figcaption>
        {t.spend.chartCaption(report.days[0] ?? "", report.days.at(-1) ?? "", report.days.length, report.timezone)} <Amount microrub={total} />
      </figcaption>
      <div class="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={t.spend.chartLabel(formatRubles(total, tag))} />
      </div>
      <details>
        <summary>{t.analytics.table}</summary>
        <DataTable
          columns={[t.spend.budgetDay, t.models.columns.model, t.spend.operation, { label: t.spend.requests, num: true }, { label: t.spend.spend, num: true }]}
          rows={rows}
          empty={t.spend.nothing}
          row={(p) => (
            <tr key={`${p.day}-${p.model}-${p.operation}`}>
              <td>{p.day}</td>
              <td>{p.model}</td>
              <td>{p.operation}</td>
              <td class="num">{p.requests}</td>
              <td class="num">
                <Amount microrub={p.amount_microrub} />
              </td>
            </tr>
          )}
        />
      </details>
    </figure>
  );
}
