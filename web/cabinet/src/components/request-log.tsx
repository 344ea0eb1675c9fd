import { useEffect, useState } from "preact/hooks";
import type { RequestLogEntry, RequestLogList, RequestLogTotals } from "@meter/contracts";
import { api, query } from "../api";
import { useI18n, useT } from "../i18n/locale";
import { dayBounds, userTimeZone } from "../lib/time";
import { Amount } from "./amount";
import { DataTable, type Column } from "./data-table";
import { DateTime } from "./date-time";
import { ChoiceFilter, CsvLink, DayField, useDayFilter } from "./filters";
import { ErrorNotice } from "./notice";
import { Pager, usePages } from "./pager";
import { useLoad } from "./use-load";

const OUTCOMES = ["succeeded", "failed", "refused", "200", "202", "402", "404", "429", "502"];
const PAGE = 25;

export interface KeyChoice {
  id: string;
  name: string | null;
}

/** The filters as they stand in the page's address, so a link to the page shows the same rows. */
function fromAddress(): Record<string, string> {
  const q = new URLSearchParams(location.search);
  return Object.fromEntries(["key_id", "model_prefix", "status", "from", "to"].map((k) => [k, q.get(k) ?? ""]));
}

function toAddress(filters: Record<string, string>): void {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(filters)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const search = q.toString();
  history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}`);
}

/**
 * An organization's request log (docs/api.md "Request log"): filters by key, model (its beginning),
 * outcome or status and a range of days of the user's zone, kept in the page's address; what the
 * filter adds up to; a row opens the entry, a failed or refused one with its reason and what to do
 * about it; the CSV link carries exactly the page's filters, so the export holds the rows the page
 * lists. `base` is the API path of the list (its CSV is `base.csv`, its totals `base/totals`).
 */
export function RequestLog({ base, keys, budgetZone, resetOn }: { base: string; keys: KeyChoice[]; budgetZone: string; resetOn: unknown }) {
  const t = useT();
  const initial = fromAddress();
  const [keyId, setKeyId] = useState(initial.key_id!);
  const [model, setModel] = useState(initial.model_prefix!);
  const [modelText, setModelText] = useState(initial.model_prefix!);
  const [status, setStatus] = useState(initial.status!);
  const [open, setOpen] = useState<string>();
  const pages = usePages();
  const fromDay = useDayFilter(pages.reset, initial.from);
  const toDay = useDayFilter(pages.reset, initial.to);
  const zone = userTimeZone();
  const from = fromDay.day ? dayBounds(fromDay.day, zone).since : undefined;
  const to = toDay.day ? dayBounds(toDay.day, zone).until : undefined;
  const filters = { key_id: keyId || undefined, model_prefix: model || undefined, status: status || undefined, from, to };
  useEffect(() => toAddress({ key_id: keyId, model_prefix: model, status, from: fromDay.day, to: toDay.day }), [keyId, model, status, fromDay.day, toDay.day]);
  const deps = [base, resetOn, keyId, model, status, fromDay.day, toDay.day];
  const page = useLoad(() => api<RequestLogList>("GET", `${base}${query({ ...filters, limit: PAGE, cursor: pages.cursor })}`), [...deps, pages.cursor]);
  const totals = useLoad(() => api<RequestLogTotals>("GET", `${base}/totals${query(filters)}`), deps);
  const resetTo = (f: () => void) => {
    f();
    pages.reset();
  };
  const filtered = keyId || model || status || fromDay.day || toDay.day;
  return (
    <>
      <form
        class="filters"
        aria-label={t.requests.filterLabel}
        onSubmit={(e) => {
          e.preventDefault();
          fromDay.choose();
          toDay.choose();
          resetTo(() => setModel(modelText.trim()));
        }}
      >
        <ChoiceFilter
          label={t.filters.key}
          name="key"
          value={keyId}
          any={t.filters.everyKey}
          options={keys.map((k) => ({ value: k.id, label: k.name ?? k.id.slice(0, 8) }))}
          onChange={(v) => resetTo(() => setKeyId(v))}
        />
        <label>
          {t.requests.model}
          <input
            name="model"
            value={modelText}
            placeholder={t.requests.modelPlaceholder}
            onInput={(e) => setModelText(e.currentTarget.value)}
            onChange={() => resetTo(() => setModel(modelText.trim()))}
          />
        </label>
        <ChoiceFilter
          label={t.requests.outcome}
          name="status"
          value={status}
          any={t.common.any}
          options={OUTCOMES.map((o) => ({ value: o, label: t.requests.outcomes[o] ?? o }))}
          onChange={(v) => resetTo(() => setStatus(v))}
        />
        <DayField filter={fromDay} name="from" label={t.filters.from(zone)} />
        <DayField filter={toDay} name="to" label={t.filters.to} />
        <CsvLink href={`/cabinet/api${base}.csv${query(filters)}`} title={t.requests.csvTitle} />
        {filtered && (
          <button
            type="button"
            class="quiet"
            onClick={() =>
              resetTo(() => {
                setKeyId("");
                setModel("");
                setModelText("");
                setStatus("");
                fromDay.clear();
                toDay.clear();
              })
            }
          >
            {t.filters.clear}
          </button>
        )}
      </form>
      <ErrorNotice error={page.error ?? totals.error} />
      {totals.data && <Totals totals={totals.data} />}
      {page.data && (
        <DataTable
          testId="requests"
          class="requests"
          caption={t.requests.caption}
          columns={columns(t)}
          rows={page.data.data}
          empty={filtered ? t.requests.noneMatch : t.requests.none}
          row={(e) => <Row key={e.id} entry={e} budgetZone={budgetZone} open={open === e.id} toggle={() => setOpen(open === e.id ? undefined : e.id)} />}
        />
      )}
      <Pager pages={pages} label={t.requests.title} hasMore={page.data?.has_more ?? false} next={page.data?.next_cursor} />
    </>
  );
}

function columns(t: ReturnType<typeof useT>): Column[] {
  const c = t.requests.columns;
  return [c.time, c.key, c.what, c.status, c.reason, c.usage, { label: c.cost, num: true }, { label: c.latency, num: true }];
}

function Totals({ totals }: { totals: RequestLogTotals }) {
  const { t, tag } = useI18n();
  const n = (x: number) => new Intl.NumberFormat(tag).format(x);
  return (
    <p class="totals" data-testid="request-totals">
      <strong>{t.requests.totals}:</strong> {t.requests.totalsFigures(n(totals.requests), n(totals.succeeded), n(totals.failed), n(totals.refused))};{" "}
      {t.requests.tokens(n(totals.input_tokens), n(totals.output_tokens))}; <Amount microrub={totals.cost_microrub} /> {t.requests.spent}
    </p>
  );
}

function usageText(e: RequestLogEntry, t: ReturnType<typeof useT>): string {
  if (!e.usage) return t.common.none;
  return "input_tokens" in e.usage ? t.requests.usage(e.usage.input_tokens, e.usage.output_tokens) : `${e.usage.quantity} ${e.usage.unit}`;
}

function Row({ entry: e, budgetZone, open, toggle }: { entry: RequestLogEntry; budgetZone: string; open: boolean; toggle: () => void }) {
  const { t, tag } = useI18n();
  const count = new Intl.NumberFormat(tag).format(e.count);
  return (
    <>
      <tr data-outcome={e.outcome} class="opens" onClick={toggle}>
        <td>
          <button type="button" class="quiet" aria-expanded={open} onClick={(ev) => (ev.stopPropagation(), toggle())}>
            <DateTime iso={e.created_at} budgetZone={budgetZone} />
          </button>
        </td>
        <td>{e.key.name ?? e.key.id.slice(0, 8)}</td>
        <td class="wrap">
          {e.endpoint} · {e.model ?? <em>{t.requests.noModel}</em>}
        </td>
        <td>
          <span class={`status status-${e.outcome}`}>{e.status}</span>
          {e.count > 1 && <span class="count"> {t.requests.times(count)}</span>}
        </td>
        <td class="wrap" data-testid="reason">
          {e.error ? <code>{e.error.code}</code> : t.common.none}
        </td>
        <td>{usageText(e, t)}</td>
        <td class="num">
          <Amount microrub={e.cost_microrub} />
        </td>
        <td class="num">{t.requests.seconds(e.latency_ms.total)}</td>
      </tr>
      {open && (
        <tr class="entry-detail">
          <td colSpan={8}>
            <dl data-testid="request-entry">
              <dt>{t.requests.entry.outcome}</dt>
              <dd>
                {t.requests.outcomeText[e.outcome]} (HTTP {e.status})
              </dd>
              {e.error && (
                <>
                  <dt>{t.requests.entry.reason}</dt>
                  <dd data-testid="request-reason">
                    {e.error.message} (<code>{e.error.code}</code>)
                    {t.requests.refusedHelp[e.error.code] && <span class="help">{t.requests.refusedHelp[e.error.code]}</span>}
                  </dd>
                </>
              )}
              {e.outcome === "refused" && (
                <>
                  <dt>{t.requests.entry.count}</dt>
                  <dd>{count}</dd>
                  <dt>{t.requests.entry.firstLast}</dt>
                  <dd>
                    <DateTime iso={e.created_at} budgetZone={budgetZone} /> – <DateTime iso={e.completed_at} budgetZone={budgetZone} />
                  </dd>
                </>
              )}
              <dt>{t.requests.entry.requestId}</dt>
              <dd>{e.request_id ?? t.common.none}</dd>
              <dt>{t.requests.entry.idempotencyKey}</dt>
              <dd>{e.idempotency_key ?? t.common.none}</dd>
              <dt>{t.requests.entry.key}</dt>
              <dd>
                {e.key.name ?? t.common.noName} <code>{e.key.id}</code>
              </dd>
              {e.outcome !== "refused" && (
                <>
                  <dt>{t.requests.entry.estimate}</dt>
                  <dd>
                    <Amount microrub={e.estimated_cost_microrub} />
                  </dd>
                  <dt>{t.requests.entry.cost}</dt>
                  <dd>
                    <Amount microrub={e.cost_microrub} />
                  </dd>
                  <dt>{t.requests.entry.latency}</dt>
                  <dd>{t.requests.entry.latencyText(e.latency_ms.total, e.latency_ms.upstream)}</dd>
                  <dt>{t.requests.entry.finished}</dt>
                  <dd>
                    <DateTime iso={e.completed_at} budgetZone={budgetZone} />
                  </dd>
                </>
              )}
            </dl>
          </td>
        </tr>
      )}
    </>
  );
}
