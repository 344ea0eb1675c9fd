import { useState } from "preact/hooks";
import type { AdminOrganization } from "@meter/contracts";
import { api } from "../api";
import { exactRubleDigits, formatRubles, parseRubles } from "../lib/money";
import { Done, ErrorNotice } from "./notice";
import { OrganizationSelect } from "./organization-select";
import { useI18n } from "../i18n/locale";

type Org = Pick<AdminOrganization, "id" | "name">;

/**
 * Credits an organization in two steps: the form, then a question naming the organization, the amount
 * and the reference, answered by a second press. Given `only` (its own page) there is nothing to
 * choose; on a list, none is chosen until the operator chooses, however many the list holds.
 */
export function CreditForm({ orgs, only, onDone }: { orgs: readonly Org[]; only?: Org; onDone: () => void }) {
  const { t, tag } = useI18n();
  const c = t.credit;
  const exact = (m: number) => t.money.exact(exactRubleDigits(m), new Intl.NumberFormat(tag).format(m));
  const [chosen, setOrg] = useState("");
  const org = only?.id ?? chosen;
  const [amount, setAmount] = useState("");
  const [reference, setReference] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const microrub = parseRubles(amount);
  const orgName = only?.name ?? orgs.find((o) => o.id === org)?.name ?? org;
  const ask = (e: Event) => {
    e.preventDefault();
    setDone(undefined);
    if (!org) return setError(new Error(c.chooseOrg));
    if (!microrub) return setError(new Error(c.badAmount));
    setError(undefined);
    setAsking(true);
  };
  const credit = () => {
    if (!microrub) return;
    setBusy(true);
    api<{ id: number }>("POST", `/admin/organizations/${org}/credits`, { amount_microrub: microrub, reference })
      .then((entry) => {
        setDone(c.credited(exact(microrub), orgName, entry.id));
        setAmount("");
        setReference("");
        onDone();
      }, setError)
      .finally(() => (setBusy(false), setAsking(false)));
  };
  return (
    <form onSubmit={ask} class="stack card" aria-labelledby="credit-heading">
      <h2 id="credit-heading">{only ? c.creditNamed(only.name) : c.creditAny}</h2>
      {!only && (
        <label>
          {t.layout.organization}
          <OrganizationSelect orgs={orgs} value={org} onChange={(id) => (setOrg(id), setAsking(false))} none={c.choose} />
        </label>
      )}
      <label>
        {c.amount}
        <input
          inputMode="decimal"
          required
          value={amount}
          onInput={(e) => (setAmount(e.currentTarget.value), setAsking(false))}
          aria-describedby="credit-exact"
        />
      </label>
      <small id="credit-exact">{microrub ? c.exactly(exact(microrub)) : c.decimals}</small>
      <label>
        {c.reference}
        <input
          required
          maxLength={200}
          value={reference}
          onInput={(e) => (setReference(e.currentTarget.value), setAsking(false))}
          aria-describedby="credit-ref"
        />
      </label>
      <small id="credit-ref">{c.referenceHelp}</small>
      <ErrorNotice error={error} />
      {done && <Done>{done}</Done>}
      {asking && microrub ? (
        <div class="confirm-credit" role="group" aria-labelledby="credit-question">
          <p id="credit-question">{c.question(formatRubles(microrub, tag), exact(microrub), orgName, reference)}</p>
          <span class="confirm">
            <button type="button" class="primary" disabled={busy} ref={(b) => b?.focus()} onClick={credit}>
              {c.yes(formatRubles(microrub, tag))}
            </button>
            <button type="button" onClick={() => setAsking(false)}>
              {t.common.cancel}
            </button>
          </span>
        </div>
      ) : (
        <button type="submit" class="primary">
          {c.button}
        </button>
      )}
    </form>
  );
}
