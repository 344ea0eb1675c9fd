import { useState } from "preact/hooks";
import type { CabinetLedgerLine, CabinetLedgerLines, LedgerLineStatus } from "@meter/contracts";
import { api, query } from "../api";
import { Amount } from "../components/amount";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { useLoad } from "../components/use-load";
import { dayBounds, formatLocalDay, localDayPattern, parseLocalDay, userTimeZone } from "../lib/time";
import { useMember } from "../session";

const STATUSES: { status: LedgerLineStatus; label: string }[] = [
  { status: "credited", label: "Credits" },
  { status: "reserved", label: "Reserved (in progress)" },
  { status: "charged", label: "Charged" },
  { status: "released", label: "Released (not charged)" },
];
const PAGE = 25;

/**
 * The chosen organization's ledger, one line per credit or request, newest first, by status and by day
 * of the user's zone (typed as the browser's language writes dates), with the entries as CSV.
 */
export function LedgerPage() {
  const me = useMember();
  const [status, setStatus] = useState<LedgerLineStatus | "">("");
  const [day, setDay] = useState("");
  const [dayText, setDayText] = useState("");
  /** The typed day could not be read (shown once the user is done typing: Enter or leaving the field). */
  const [dayUnread, setDayUnread] = useState(false);
  /** The cursors of the pages before this one (the first page has none). */
  const [trail, setTrail] = useState<(string | undefined)[]>([undefined]);
  const cursor = trail.at(-1);
  const bounds = day ? dayBounds(day, userTimeZone()) : undefined;
  const dates = { since: bounds?.since, until: bounds?.until };
  const page = useLoad(
    () => api<CabinetLedgerLines>("GET", `/ledger/lines${query({ status: status || undefined, ...dates, limit: PAGE, cursor })}`),
    [me.organization_id, status, day, cursor],
  );
  const resetTo = (f: () => void) => {
    f();
    setTrail([undefined]);
  };
  const chooseDay = () => {
    const typedDay = dayText.trim() ? parseLocalDay(dayText) : "";
    setDayUnread(typedDay === undefined);
    if (typedDay === undefined) return;
    resetTo(() => setDay(typedDay));
    if (typedDay) setDayText(formatLocalDay(typedDay));
  };
  return (
    <Layout title="Ledger">
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          chooseDay();
        }}
        aria-label="Filter the ledger"
      >
        <label>
          Status
          <select value={status} onChange={(e) => resetTo(() => setStatus(e.currentTarget.value as LedgerLineStatus | ""))}>
            <option value="">Everything</option>
            {STATUSES.map((s) => (
              <option key={s.status} value={s.status}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Day ({userTimeZone()})
          <input
            name="day"
            inputMode="numeric"
            placeholder={localDayPattern()}
            aria-invalid={dayUnread}
            aria-describedby={dayUnread ? "day-error" : undefined}
            value={dayText}
            onInput={(e) => setDayText(e.currentTarget.value)}
            onChange={chooseDay}
          />
        </label>
        {dayUnread && (
          <small id="day-error" class="field-error">
            Type a day as {localDayPattern()}, e.g. {formatLocalDay(new Date().toISOString().slice(0, 10))}.
          </small>
        )}
        {day && (
          <button
            type="button"
            class="quiet"
            onClick={() => {
              setDayText("");
              setDayUnread(false);
              resetTo(() => setDay(""));
            }}
          >
            Any day
          </button>
        )}
        <a class="button" href={`/cabinet/api/ledger.csv${query(dates)}`} download title="Every entry: credits, holds, charges and releases">
          Export CSV
        </a>
      </form>
      <ErrorNotice error={page.error} />
      {page.data && page.data.data.length === 0 && <p>Nothing{status || day ? " matches the filter" : " yet"}.</p>}
      {page.data && page.data.data.length > 0 && <LedgerTable rows={page.data.data} budgetZone={me.budget_timezone} />}
      <nav class="pager" aria-label="Ledger pages">
        <button type="button" disabled={trail.length < 2} onClick={() => setTrail((t) => t.slice(0, -1))}>
          Newer
        </button>
        <span>Page {trail.length}</span>
        <button type="button" disabled={!page.data?.has_more} onClick={() => page.data?.next_cursor && setTrail((t) => [...t, page.data!.next_cursor!])}>
          Older
        </button>
      </nav>
    </Layout>
  );
}

const SIGN = (microrub: number) => (microrub > 0 ? "+" : microrub < 0 ? "−" : undefined);

function LedgerTable({ rows, budgetZone }: { rows: CabinetLedgerLine[]; budgetZone: string }) {
  return (
    <table data-testid="ledger" class="ledger">
      <caption>One line per credit and per request. A request's amount stays reserved until it is charged (what ran) or released (nothing).</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Operation · model</th>
          <th scope="col">Key</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Amount
          </th>
          <th scope="col" class="reference">
            Reference
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((l) => (
          <tr key={l.id} data-status={l.status}>
            <td>
              <DateTime iso={l.created_at} budgetZone={budgetZone} />
            </td>
            <td>{l.status === "credited" ? "credit" : `${l.operation ?? ""} · ${l.model ?? ""}`}</td>
            <td>
              <span class="key-name" title={l.key_name ?? l.key_id ?? undefined}>
                {l.key_name ?? (l.key_id ? l.key_id.slice(0, 8) : "")}
              </span>
            </td>
            <td>
              <span class={`status status-${l.status}`}>{l.status}</span>
            </td>
            <td class="num">
              <Amount microrub={l.amount_microrub} sign={SIGN(l.amount_microrub)} />
              {l.status === "released" && (
                <span class="detail">
                  {" "}
                  (<Amount microrub={l.reserved_microrub} /> freed)
                </span>
              )}
              {l.status === "charged" && l.reserved_microrub !== -l.amount_microrub && (
                <span class="detail">
                  {" "}
                  of <Amount microrub={l.reserved_microrub} /> reserved
                </span>
              )}
            </td>
            <td class="reference">{l.reference ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
