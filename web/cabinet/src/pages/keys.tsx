import { useState } from "preact/hooks";
import type { CabinetKey, Scope } from "@meter/contracts";
import { api } from "../api";
import { Amount } from "../components/amount";
import { CheckList } from "../components/check-list";
import { ConfirmButton } from "../components/confirm-button";
import { ACTIONS, DataTable } from "../components/data-table";
import { DailyBudgetField } from "../components/daily-budget-field";
import { DateTime } from "../components/date-time";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { ShownOnce } from "../components/secret";
import { useLoad } from "../components/use-load";
import { useI18n, useT } from "../i18n/locale";
import { formatPrice, formatRubles, parseRubles } from "../lib/money";
import { formatDay } from "../lib/time";
import { useMember } from "../session";
import { KeyEditForm } from "./key-edit-form";

const SCOPES: Scope[] = ["text", "images", "files:read", "files:write", "mcp:read", "mcp:invoke"];

/**
 * The member's own keys in the chosen organization: create (shown once), today's budget against what
 * the next typical request needs (a key that can no longer afford it says so), its activity, revoke.
 */
export function KeysPage() {
  const me = useMember();
  const t = useT();
  const keys = useLoad(() => api<{ data: CabinetKey[] }>("GET", "/keys"), [me.organization_id]);
  const [created, setCreated] = useState<(CabinetKey & { key: string }) | undefined>();
  const [revoked, setRevoked] = useState<string | undefined>();
  const [editing, setEditing] = useState<string | undefined>();
  const [saved, setSaved] = useState<string | undefined>();
  const [showRevoked, setShowRevoked] = useState(false);
  const [error, setError] = useState<unknown>();
  const all = keys.data?.data;
  const shown = all?.filter((k) => showRevoked || k.status === "active");
  const hidden = (all?.length ?? 0) - (shown?.length ?? 0);
  const c = t.keys.columns;
  return (
    <Layout title={t.keys.title}>
      <CreateKeyForm
        onCreated={(k) => {
          setCreated(k);
          setRevoked(undefined);
          keys.reload();
        }}
      />
      {created && (
        <ShownOnce
          headingId="new-key-heading"
          title={<>{t.keys.newKey(created.name ?? "")}</>}
          secretId="new-key"
          secret={created.key}
          copyLabel={t.keys.copyKey}
          onSaved={() => setCreated(undefined)}
        >
          <p>{t.keys.shownOnce}</p>
        </ShownOnce>
      )}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">{t.keys.yours}</h2>
        <ErrorNotice error={keys.error ?? error} />
        {revoked && <Done>{t.keys.revoked(revoked)}</Done>}
        {saved && <Done>{t.keys.changed(saved)}</Done>}
        {all && all.some((k) => k.status !== "active") && (
          <label class="check">
            <input type="checkbox" name="show_revoked" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} />
            {t.keys.showRevoked}
            {hidden > 0 && t.keys.hidden(hidden)}
          </label>
        )}
        {all && all.length === 0 && <p>{t.keys.noKeys}</p>}
        {all && all.length > 0 && shown && (
          <DataTable
            caption={t.keys.caption(shown[0]?.usage.day ?? "", me.budget_timezone)}
            columns={[c.name, c.key, c.scopes, c.today, c.activity, c.created, c.status, ACTIONS]}
            rows={shown}
            empty={t.keys.noActive}
            row={(k) => (
              <tr key={k.id} data-key-id={k.id} data-refusing={k.next_request?.fits === false ? "true" : undefined}>
                <th scope="row">{k.name ?? t.common.noName}</th>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>
                  <code>{k.scopes.join(", ")}</code>
                </td>
                <td>
                  <BudgetUse k={k} />
                </td>
                <td>
                  <Activity k={k} budgetZone={me.budget_timezone} />
                </td>
                <td>
                  <DateTime iso={k.created_at} budgetZone={me.budget_timezone} />
                </td>
                <td>
                  <span class={`status status-${k.status}`}>{t.keys.status[k.status] ?? k.status}</span>
                  {k.status === "active" && k.expires_at && (
                    <small>
                      {" "}
                      {t.keys.until} <DateTime iso={k.expires_at} budgetZone={me.budget_timezone} />
                    </small>
                  )}
                  {k.budget_alert_percents.length > 0 && <small> {t.keys.alerts(k.budget_alert_percents.join(", "))}</small>}
                </td>
                <td>
                  {k.status === "active" && editing !== k.id && (
                    <button type="button" class="quiet" aria-label={t.keys.changeName(k.name ?? k.prefix)} onClick={() => setEditing(k.id)}>
                      {t.keys.change}
                    </button>
                  )}
                  {k.status === "active" && editing === k.id && (
                    <KeyEditForm
                      k={k}
                      onCancel={() => setEditing(undefined)}
                      onSaved={(changed) => {
                        setEditing(undefined);
                        setSaved(changed.name ?? changed.prefix);
                        setRevoked(undefined);
                        keys.reload();
                      }}
                    />
                  )}{" "}
                  {k.status === "active" && (
                    <ConfirmButton
                      label={t.keys.revoke}
                      name={t.keys.revokeName(k.name ?? k.prefix)}
                      confirmLabel={t.keys.revokeConfirm}
                      onConfirm={async () => {
                        try {
                          await api("POST", `/keys/${k.id}/revoke`);
                          setRevoked(k.name ?? k.prefix);
                          keys.reload();
                        } catch (e) {
                          setError(e);
                        }
                      }}
                    />
                  )}
                </td>
              </tr>
            )}
          />
        )}
      </section>
    </Layout>
  );
}

/**
 * Today's budget, honestly: spent and reserved against the budget, and what the key's next typical
 * request needs (its estimate) against the room left; a key that can no longer afford it is marked
 * refusing, so a customer sees why its calls fail before opening the log.
 */
function BudgetUse({ k }: { k: CabinetKey }) {
  const { t, tag } = useI18n();
  const used = k.usage.spent_microrub + k.usage.reserved_microrub;
  const next = k.status === "active" ? k.next_request : null;
  // Rounded to kopecks, unless that makes what is needed and what is left read the same: then every digit.
  const money = (m: number, other: number) => (formatRubles(m, tag) === formatRubles(other, tag) ? formatPrice(m, tag) : formatRubles(m, tag));
  return (
    <span class={`budget${next && !next.fits ? " refusing" : ""}`} data-testid="budget-use">
      <Amount microrub={k.usage.spent_microrub} /> {t.keys.spentOf} <Amount microrub={k.daily_budget_microrub} />
      {k.usage.reserved_microrub > 0 && (
        <>
          {" "}
          (+ <Amount microrub={k.usage.reserved_microrub} /> {t.keys.reservedPlus})
        </>
      )}
      <meter min={0} max={Math.max(k.daily_budget_microrub, 1)} value={used} aria-label={t.keys.budgetUsed(k.usage.day)} />
      {next && !next.fits && (
        <strong class="refusing-note" data-testid="refusing">
          {t.keys.refusing}:{" "}
          {t.keys.refusingText(money(next.estimated_cost_microrub, next.room_microrub), money(next.room_microrub, next.estimated_cost_microrub))}
        </strong>
      )}
      {next && next.fits && (
        <small data-testid="next-request">
          {t.keys.fits(money(next.estimated_cost_microrub, next.room_microrub), money(next.room_microrub, next.estimated_cost_microrub))}
        </small>
      )}
    </span>
  );
}

/** Last use, requests today and over 7 days, and a small bar per day (the same figures in its label). */
function Activity({ k, budgetZone }: { k: CabinetKey; budgetZone: string }) {
  const { t, tag } = useI18n();
  const a = k.activity;
  const n = (x: number) => new Intl.NumberFormat(tag).format(x);
  const peak = Math.max(1, ...a.daily.map((d) => d.requests));
  const label = t.keys.trend(a.daily.map((d) => `${formatDay(d.day, tag)}: ${n(d.requests)}`).join(", "));
  return (
    <span class="activity" data-testid="key-activity">
      <small>
        {t.keys.lastUsed}: {a.last_used_at ? <DateTime iso={a.last_used_at} budgetZone={budgetZone} /> : t.keys.never}
      </small>
      <small>{t.keys.today(n(a.requests_today))}</small>
      <small>{t.keys.week(n(a.requests_7d), n(a.errors_7d))}</small>
      <span class="sparkline" role="img" aria-label={label}>
        {a.daily.map((d) => (
          <span key={d.day} class={d.errors > 0 ? "bar has-errors" : "bar"} style={{ height: `${Math.max(2, Math.round((d.requests / peak) * 100))}%` }} />
        ))}
      </span>
    </span>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: (k: CabinetKey & { key: string }) => void }) {
  const t = useT();
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Scope[]>(["text"]);
  const [budget, setBudget] = useState("100");
  const [error, setError] = useState<unknown>();
  const budgetMicrorub = parseRubles(budget);
  const submit = (e: Event) => {
    e.preventDefault();
    if (budgetMicrorub === undefined) return setError(new Error(t.errors.badAmount));
    if (scopes.length === 0) return setError(new Error(t.errors.noScope));
    setError(undefined);
    api<CabinetKey & { key: string }>("POST", "/keys", { name, scopes, daily_budget_microrub: budgetMicrorub }).then((k) => {
      setName("");
      onCreated(k);
    }, setError);
  };
  return (
    <section aria-labelledby="create-heading">
      <h2 id="create-heading">{t.keys.create}</h2>
      <form onSubmit={submit} class="stack">
        <label>
          {t.keys.name}
          <input name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder={t.keys.namePlaceholder} />
        </label>
        <CheckList
          legend={t.keys.scopes}
          name="scope"
          options={SCOPES.map((value) => ({ value, what: t.keys.scopeText[value] ?? value }))}
          chosen={scopes}
          onChange={setScopes}
        />
        <DailyBudgetField value={budget} onInput={setBudget} helpId="budget-help" />
        <small id="budget-help">{t.keys.budgetHelp}</small>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          {t.keys.createButton}
        </button>
      </form>
    </section>
  );
}
