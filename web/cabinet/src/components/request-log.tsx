import { useState } from "preact/hooks";
import type { RequestLogEntry, RequestLogList } from "@meter/contracts";
import { api, query } from "../api";
import { dayBounds, userTimeZone } from "../lib/time";
import { Amount } from "./amount";
import { DataTable, type Column } from "./data-table";
import { DateTime } from "./date-time";
import { ChoiceFilter, CsvLink, DayField, useDayFilter } from "./filters";
import { ErrorNotice } from "./notice";
import { Pager, usePages } from "./pager";
import { useLoad } from "./use-load";

const STATUSES = [
  { value: "succeeded", label: "Charged (succeeded)" },
  { value: "failed", label: "Not charged (failed)" },
  { value: "200", label: "HTTP 200" },
  { value: "202", label: "HTTP 202 (media jobs)" },
  { value: "502", label: "HTTP 502" },
];
const PAGE = 25;

export interface KeyChoice {
  id: string;
  name: string | null;
}

/**
 * An organization's request log (docs/api.md "Request log"): filters by key, model, status and day of
 * the user's zone; a row opens the entry; the CSV link carries exactly the page's filters, so the
 * export holds the rows the page lists. `base` is the API path of the list (its CSV is `base.csv`).
 */
export function RequestLog({ base, keys, budgetZone, resetOn }: { base: string; keys: KeyChoice[]; budgetZone: string; resetOn: unknown }) {
  const [keyId, setKeyId] = useState("");
  const [model, setModel] = useState("");
  const [modelText, setModelText] = useState("");
  const [status, setStatus] = useState("");
  const [open, setOpen] = useState<string>();
  const pages = usePages();
  const dayFilter = useDayFilter(pages.reset);
  const { day } = dayFilter;
  const bounds = day ? dayBounds(day, userTimeZone()) : undefined;
  const filters = { key_id: keyId || undefined, model: model || undefined, status: status || undefined, from: bounds?.since, to: bounds?.until };
  const page = useLoad(
    () => api<RequestLogList>("GET", `${base}${query({ ...filters, limit: PAGE, cursor: pages.cursor })}`),
    [base, resetOn, keyId, model, status, day, pages.cursor],
  );
  const resetTo = (f: () => void) => {
    f();
    pages.reset();
  };
  const filtered = keyId || model || status || day;
  return (
    <>
      <form
        class="filters"
        aria-label="Filter the requests"
        onSubmit={(e) => {
          e.preventDefault();
          dayFilter.choose();
          resetTo(() => setModel(modelText.trim()));
        }}
      >
        <ChoiceFilter
          label="Key"
          name="key"
          value={keyId}
          any="Every key"
          options={keys.map((k) => ({ value: k.id, label: k.name ?? k.id.slice(0, 8) }))}
          onChange={(v) => resetTo(() => setKeyId(v))}
        />
        <label>
          Model
          <input
            name="model"
            value={modelText}
            placeholder="any"
            onInput={(e) => setModelText(e.currentTarget.value)}
            onChange={() => resetTo(() => setModel(modelText.trim()))}
          />
        </label>
        <ChoiceFilter label="Status" name="status" value={status} any="Any" options={STATUSES} onChange={(v) => resetTo(() => setStatus(v))} />
        <DayField filter={dayFilter} />
        <CsvLink href={`/cabinet/api${base}.csv${query(filters)}`} title="The rows this page lists, with the same filters" />
      </form>
      <ErrorNotice error={page.error} />
      {page.data && (
        <DataTable
          scroll
          testId="requests"
          class="requests"
          caption="One line per paid request, newest first; choose a line for all it recorded."
          columns={COLUMNS}
          rows={page.data.data}
          empty={`No requests${filtered ? " match the filter" : " yet"}.`}
          row={(e) => <Row key={e.id} entry={e} budgetZone={budgetZone} open={open === e.id} toggle={() => setOpen(open === e.id ? undefined : e.id)} />}
        />
      )}
      <Pager pages={pages} label="Request pages" hasMore={page.data?.has_more ?? false} next={page.data?.next_cursor} />
    </>
  );
}

const COLUMNS: Column[] = ["Time", "Key", "Endpoint · model", "Status", "Usage", { label: "Cost", num: true }, { label: "Latency", num: true }];

function usageText(e: RequestLogEntry): string {
  return "input_tokens" in e.usage ? `${e.usage.input_tokens} in · ${e.usage.output_tokens} out` : `${e.usage.quantity} ${e.usage.unit}`;
}

function Row({ entry: e, budgetZone, open, toggle }: { entry: RequestLogEntry; budgetZone: string; open: boolean; toggle: () => void }) {
  return (
    <>
      <tr data-outcome={e.outcome} class="opens" onClick={toggle}>
        <td>
          <button type="button" class="quiet" aria-expanded={open} onClick={(ev) => (ev.stopPropagation(), toggle())}>
            <DateTime iso={e.created_at} budgetZone={budgetZone} />
          </button>
        </td>
        <td>{e.key.name ?? e.key.id.slice(0, 8)}</td>
        <td>
          {e.endpoint} · {e.model}
        </td>
        <td>
          <span class={`status status-${e.outcome}`}>{e.status}</span>
        </td>
        <td>{usageText(e)}</td>
        <td class="num">
          <Amount microrub={e.cost_microrub} />
        </td>
        <td class="num">{e.latency_ms.total} ms</td>
      </tr>
      {open && (
        <tr class="entry-detail">
          <td colSpan={COLUMNS.length}>
            <dl data-testid="request-entry">
              <dt>Request id</dt>
              <dd>{e.request_id ?? "—"}</dd>
              <dt>Idempotency-Key</dt>
              <dd>{e.idempotency_key ?? "—"}</dd>
              <dt>Key</dt>
              <dd>
                {e.key.name ?? "(no name)"} <code>{e.key.id}</code>
              </dd>
              <dt>Outcome</dt>
              <dd>
                {e.outcome === "succeeded" ? "charged" : "not charged"} (HTTP {e.status})
              </dd>
              <dt>Estimate (reserved)</dt>
              <dd>
                <Amount microrub={e.estimated_cost_microrub} />
              </dd>
              <dt>Cost</dt>
              <dd>
                <Amount microrub={e.cost_microrub} />
              </dd>
              <dt>Latency</dt>
              <dd>
                {e.latency_ms.total} ms in all{e.latency_ms.upstream !== null ? `, ${e.latency_ms.upstream} ms upstream` : ""}
              </dd>
              <dt>Finished</dt>
              <dd>
                <DateTime iso={e.completed_at} budgetZone={budgetZone} />
              </dd>
            </dl>
          </td>
        </tr>
      )}
    </>
  );
}
