import { useState } from "preact/hooks";
import type { SpendReport } from "@meter/contracts";
import { spendSeries } from "../lib/spend-series";
import { Amount } from "./amount";
import { DataTable, type Column } from "./data-table";
import { ErrorNotice } from "./notice";
import { SpendChart } from "./spend-chart";
import type { Loaded } from "./use-load";
import { useT } from "../i18n/locale";

/** The report's window as the API takes it: the last 30 days, or a chosen range of budget days. */
export interface SpendWindow {
  from?: string;
  to?: string;
}

/** Two day fields (budget days, YYYY-MM-DD as the browser's date picker gives them) and a button. */
function SpendWindowForm({ value, onChange }: { value: SpendWindow; onChange: (w: SpendWindow) => void }) {
  const t = useT();
  const [from, setFrom] = useState(value.from ?? "");
  const [to, setTo] = useState(value.to ?? "");
  return (
    <form
      class="filters"
      aria-label={t.spend.window}
      onSubmit={(e) => {
        e.preventDefault();
        onChange(from ? { from, ...(to ? { to } : {}) } : {});
      }}
    >
      <label>
        {t.analytics.from}
        <input type="date" value={from} max={to || undefined} onInput={(e) => setFrom(e.currentTarget.value)} />
      </label>
      <label>
        {t.analytics.to}
        <input type="date" value={to} min={from || undefined} onInput={(e) => setTo(e.currentTarget.value)} />
      </label>
      <button type="submit">{t.common.show}</button>
      {value.from && (
        <button type="button" class="quiet" onClick={() => (setFrom(""), setTo(""), onChange({}))}>
          {t.spend.last30}
        </button>
      )}
    </form>
  );
}

/** A Spend section: the window's form, the chart per day, and the tables per key, model and month. */
export function SpendSection({
  headingId,
  window,
  onWindow,
  spend,
}: {
  headingId: string;
  window: SpendWindow;
  onWindow: (w: SpendWindow) => void;
  spend: Loaded<SpendReport>;
}) {
  const t = useT();
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{t.spend.heading}</h2>
      <SpendWindowForm value={window} onChange={onWindow} />
      <ErrorNotice error={spend.error} />
      {spend.data && <SpendChart report={spend.data} />}
      {spend.data && <SpendDetails report={spend.data} />}
    </section>
  );
}

/** The window's spend per key and per model, and the last twelve months' totals. */
function SpendDetails({ report }: { report: SpendReport }) {
  const t = useT();
  const REQUESTS: Column = { label: t.spend.requests, num: true };
  const SPEND: Column = { label: t.spend.spend, num: true };
  const NOTHING = t.spend.nothing;
  const { series } = spendSeries(report);
  const first = report.days[0];
  const last = report.days.at(-1);
  return (
    <div class="columns">
      <DataTable
        testId="spend-by-key"
        caption={t.spend.perKey(first ?? "", last ?? "")}
        columns={[t.filters.key, REQUESTS, SPEND]}
        rows={report.by_key}
        emptyRow={NOTHING}
        row={(k) => (
          <tr key={k.key_id ?? "none"}>
            <th scope="row">{k.key_name ?? (k.key_id ? t.spend.keyId(k.key_id.slice(0, 8)) : t.spend.noKey)}</th>
            <td class="num">{k.requests}</td>
            <td class="num">
              <Amount microrub={k.amount_microrub} />
            </td>
          </tr>
        )}
      />
      <DataTable
        testId="spend-by-model"
        caption={t.spend.perModel(first ?? "", last ?? "")}
        columns={[t.spend.modelOperation, SPEND]}
        rows={series}
        emptyRow={NOTHING}
        row={(s) => (
          <tr key={s.label}>
            <th scope="row">{s.label}</th>
            <td class="num">
              <Amount microrub={s.total} />
            </td>
          </tr>
        )}
      />
      <DataTable
        testId="spend-by-month"
        caption={t.spend.perMonth(report.timezone)}
        columns={[t.spend.month, REQUESTS, SPEND]}
        rows={report.months}
        row={(m) => (
          <tr key={m.month}>
            <th scope="row">{m.month}</th>
            <td class="num">{m.requests}</td>
            <td class="num">
              <Amount microrub={m.amount_microrub} />
            </td>
          </tr>
        )}
      />
    </div>
  );
}
