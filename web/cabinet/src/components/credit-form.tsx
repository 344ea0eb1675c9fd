import { useState } from "preact/hooks";
import type { AdminOrganization } from "@meter/contracts";
import { api } from "../api";
import { exactRubles, formatRubles, parseRubles } from "../lib/money";
import { Done, ErrorNotice } from "./notice";
import { OrganizationSelect } from "./organization-select";

type Org = Pick<AdminOrganization, "id" | "name">;

/**
 * Credits an organization in two steps: the form, then a question naming the organization, the amount
 * and the reference, answered by a second press. Given `only` (its own page) there is nothing to
 * choose; on a list, none is chosen until the operator chooses, however many the list holds.
 */
export function CreditForm({ orgs, only, onDone }: { orgs: readonly Org[]; only?: Org; onDone: () => void }) {
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
    if (!org) return setError(new Error("choose the organization to credit"));
    if (!microrub) return setError(new Error("the amount must be a positive number of rubles, at most six decimals"));
    setError(undefined);
    setAsking(true);
  };
  const credit = () => {
    if (!microrub) return;
    setBusy(true);
    api<{ id: number }>("POST", `/admin/organizations/${org}/credits`, { amount_microrub: microrub, reference })
      .then((entry) => {
        setDone(`Credited ${exactRubles(microrub)} to ${orgName} (ledger entry ${entry.id}).`);
        setAmount("");
        setReference("");
        onDone();
      }, setError)
      .finally(() => (setBusy(false), setAsking(false)));
  };
  return (
    <form onSubmit={ask} class="stack card" aria-labelledby="credit-heading">
      <h2 id="credit-heading">Credit {only ? only.name : "an organization"}</h2>
      {!only && (
        <label>
          Organization
          <OrganizationSelect orgs={orgs} value={org} onChange={(id) => (setOrg(id), setAsking(false))} none="Choose an organization" />
        </label>
      )}
      <label>
        Amount, ₽
        <input
          inputMode="decimal"
          required
          value={amount}
          onInput={(e) => (setAmount(e.currentTarget.value), setAsking(false))}
          aria-describedby="credit-exact"
        />
      </label>
      <small id="credit-exact">{microrub ? `Exactly ${exactRubles(microrub)}` : "Up to six decimals: 1 ₽ = 1,000,000 microrub."}</small>
      <label>
        Reference (invoice, payment id)
        <input
          required
          maxLength={200}
          value={reference}
          onInput={(e) => (setReference(e.currentTarget.value), setAsking(false))}
          aria-describedby="credit-ref"
        />
      </label>
      <small id="credit-ref">Sending the same reference again does not credit twice.</small>
      <ErrorNotice error={error} />
      {done && <Done>{done}</Done>}
      {asking && microrub ? (
        <div class="confirm-credit" role="group" aria-labelledby="credit-question">
          <p id="credit-question">
            Credit <strong>{formatRubles(microrub)}</strong> ({exactRubles(microrub)}) to <strong>{orgName}</strong>, reference “{reference}”?
          </p>
          <span class="confirm">
            <button type="button" class="primary" disabled={busy} ref={(b) => b?.focus()} onClick={credit}>
              Yes, credit {formatRubles(microrub)}
            </button>
            <button type="button" onClick={() => setAsking(false)}>
              Cancel
            </button>
          </span>
        </div>
      ) : (
        <button type="submit" class="primary">
          Credit
        </button>
      )}
    </form>
  );
}
