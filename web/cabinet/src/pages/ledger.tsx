import { useState } from "preact/hooks";
import type { CabinetLedgerLine, CabinetLedgerLines, LedgerLineStatus } from "@meter/contracts";
import { api, query } from "../api";
import { Amount } from "../components/amount";
import { DataTable, type Column } from "../components/data-table";
import { DateTime } from "../components/date-time";
import { ChoiceFilter, CsvLink, DayField, useDayFilter } from "../components/filters";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { Pager, usePages } from "../components/pager";
import { useLoad } from "../components/use-load";
import { dayBounds, userTimeZone } from "../lib/time";
import { useI18n, useT } from "../i18n/locale";
import { useMember } from "../session";

const STATUSES: LedgerLineStatus[] = ["credited", "reserved", "charged", "released"];
const PAGE = 25;

/**
 * The chosen organization's ledger, one line per credit or request, newest first, by status and by day
 * of the user's zone (typed as the browser's language writes dates), with the entries as CSV.
 */
export function LedgerPage() {
  const me = useMember();
  const t = useT();
  const [status, setStatus] = useState<LedgerLineStatus | "">("");
  const pages = usePages();
  const dayFilter = useDayFilter(pages.reset);
  const { day } = dayFilter;
  const bounds = day ? dayBounds(day, userTimeZone()) : undefined;
  const dates = { since: bounds?.since, until: bounds?.until };
  const page = useLoad(
    () => api<CabinetLedgerLines>("GET", `/ledger/lines${query({ status: status || undefined, ...dates, limit: PAGE, cursor: pages.cursor })}`),
    [me.organization_id, status, day, pages.cursor],
  );
  return (
    <Layout title={t.nav.ledger}>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          dayFilter.choose();
        }}
        aria-label={t.ledger.filterLabel}
      >
        <ChoiceFilter
          label={t.ledger.status}
          value={status}
          any={t.ledger.everything}
          options={STATUSES.map((value) => ({ value, label: t.ledger.statuses[value] ?? value }))}
          onChange={(v) => {
            setStatus(v);
            pages.reset();
          }}
        />
        <DayField filter={dayFilter} example />
        {day && (
          <button type="button" class="quiet" onClick={dayFilter.clear}>
            {t.ledger.anyDay}
          </button>
        )}
        <CsvLink href={`/cabinet/api/ledger.csv${query({ status: status || undefined, ...dates })}`} title={t.ledger.csvTitle} />
      </form>
      <ErrorNotice error={page.error} />
      {page.data && <LedgerTable rows={page.data.data} budgetZone={me.budget_timezone} empty={status || day ? t.ledger.noneMatch : t.ledger.none} />}
      <Pager pages={pages} label={t.nav.ledger} hasMore={page.data?.has_more ?? false} next={page.data?.next_cursor} />
    </Layout>
  );
}

/** What a line is, in a member's words; the CSV's `description` says the same (ledger-csv.render.ts). */
function LineWhat({ line }: { line: CabinetLedgerLine }) {
  const t = useT();
  if (line.kind === "credit") return <>{t.ledger.credit}</>;
  if (line.kind === "allowance") {
    return (
      <>
        {t.ledger.setAside} <span class="detail">({t.ledger.returned})</span>
      </>
    );
  }
  return <>{[line.operation, line.model].filter(Boolean).join(" · ")}</>;
}

const SIGN = (microrub: number) => (microrub > 0 ? "+" : microrub < 0 ? "−" : undefined);

/** The ledger's lines (`empty`: said instead when there is none). */
export function LedgerTable({ rows, budgetZone, empty }: { rows: CabinetLedgerLine[]; budgetZone: string; empty: string }) {
  const { t } = useI18n();
  const c = t.ledger.columns;
  const columns: Column[] = [c.time, c.what, c.key, c.status, { label: c.amount, num: true }, { label: c.reference, class: "reference" }];
  return (
    <DataTable
      testId="ledger"
      class="ledger"
      caption={t.ledger.caption}
      columns={columns}
      rows={rows}
      empty={empty}
      row={(l) => (
        <tr key={l.id} data-status={l.status}>
          <td>
            <DateTime iso={l.created_at} budgetZone={budgetZone} />
          </td>
          <td>
            <LineWhat line={l} />
          </td>
          <td>
            <span class="key-name" title={l.key_name ?? l.key_id ?? undefined}>
              {l.key_name ?? (l.key_id ? l.key_id.slice(0, 8) : "")}
            </span>
          </td>
          <td>
            <span class={`status status-${l.status}`}>{t.ledger.lineStatus[l.status] ?? l.status}</span>
          </td>
          <td class="num">
            <Amount microrub={l.amount_microrub} sign={SIGN(l.amount_microrub)} />
            {l.status === "released" && (
              <span class="detail">
                {" "}
                (<Amount microrub={l.reserved_microrub} /> {t.ledger.freed})
              </span>
            )}
            {l.status === "charged" && l.reserved_microrub !== -l.amount_microrub && (
              <span class="detail">
                {" "}
                {t.ledger.of} <Amount microrub={l.reserved_microrub} /> {t.ledger.reserved}
              </span>
            )}
          </td>
          <td class="reference">{l.kind === "allowance" ? "" : (l.reference ?? "")}</td>
        </tr>
      )}
    />
  );
}
