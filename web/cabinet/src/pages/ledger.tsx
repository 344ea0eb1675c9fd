import { useState } from "preact/hooks";
import type { CabinetLedgerEntry, CabinetLedgerPage, LedgerKind } from "@meter/contracts";
import { api, query } from "../api";
import { Amount } from "../components/amount";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { ErrorNotice } from "../components/notice";
import { useLoad } from "../components/use-load";
import { dayBounds, userTimeZone } from "../lib/time";
import { useMember } from "../session";

const KINDS: { kind: LedgerKind; label: string }[] = [
  { kind: "credit", label: "Credits" },
  { kind: "hold", label: "Reservations (holds)" },
  { kind: "settle", label: "Charges (settlements)" },
  { kind: "release", label: "Releases" },
  { kind: "expire", label: "Expiries" },
];
const PAGE = 25;

/** How an entry moves money: credits add, settlements take; holds and releases only reserve and free. */
const SIGN: Record<LedgerKind, "+" | "−" | undefined> = { credit: "+", settle: "−", hold: undefined, release: undefined, expire: undefined };

/** The chosen organization's ledger, newest first, by kind and by day of the user's zone, with CSV export. */
export function LedgerPage() {
  const me = useMember();
  const [kind, setKind] = useState<LedgerKind | "">("");
  const [day, setDay] = useState("");
  /** The cursors of the pages before this one (the first page has none). */
  const [trail, setTrail] = useState<(string | undefined)[]>([undefined]);
  const cursor = trail.at(-1);
  const bounds = day ? dayBounds(day, userTimeZone()) : undefined;
  const filter = { kind: kind || undefined, since: bounds?.since, until: bounds?.until };
  const page = useLoad(() => api<CabinetLedgerPage>("GET", `/ledger${query({ ...filter, limit: PAGE, cursor })}`), [me.organization_id, kind, day, cursor]);
  const resetTo = (f: () => void) => {
    f();
    setTrail([undefined]);
  };
  return (
    <Layout title="Ledger">
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter the ledger">
        <label>
          Kind
          <select value={kind} onChange={(e) => resetTo(() => setKind(e.currentTarget.value as LedgerKind | ""))}>
            <option value="">All entries</option>
            {KINDS.map((k) => (
              <option key={k.kind} value={k.kind}>
                {k.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Day ({userTimeZone()})
          <input type="date" value={day} onChange={(e) => resetTo(() => setDay(e.currentTarget.value))} />
        </label>
        {day && (
          <button type="button" class="quiet" onClick={() => resetTo(() => setDay(""))}>
            Any day
          </button>
        )}
        <a class="button" href={`/cabinet/api/ledger.csv${query(filter)}`} download>
          Export CSV
        </a>
      </form>
      <ErrorNotice error={page.error} />
      {page.data && page.data.data.length === 0 && <p>No entries{kind || day ? " match the filter" : " yet"}.</p>}
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

function LedgerTable({ rows, budgetZone }: { rows: CabinetLedgerEntry[]; budgetZone: string }) {
  return (
    <table data-testid="ledger">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Kind</th>
          <th scope="col" class="num">
            Amount
          </th>
          <th scope="col">Model · operation</th>
          <th scope="col">Key</th>
          <th scope="col" class="num">
            Balance after
          </th>
          <th scope="col" class="num">
            Reserved after
          </th>
          <th scope="col">Reference</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((e) => (
          <tr key={e.id} data-kind={e.kind}>
            <td>
              <DateTime iso={e.created_at} budgetZone={budgetZone} />
            </td>
            <td>{e.kind}</td>
            <td class="num">
              <Amount microrub={e.amount_microrub} sign={SIGN[e.kind]} />
            </td>
            <td>{e.model ? `${e.model} · ${e.operation ?? ""}` : ""}</td>
            <td>{e.key_name ?? (e.key_id ? e.key_id.slice(0, 8) : "")}</td>
            <td class="num">
              <Amount microrub={e.balance_after_microrub} />
            </td>
            <td class="num">
              <Amount microrub={e.reserved_after_microrub} />
            </td>
            <td class="reference">{e.reference ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
