import { useState } from "preact/hooks";
import type { CabinetKey } from "@meter/contracts";
import { api } from "../api";
import { DailyBudgetField } from "../components/daily-budget-field";
import { ErrorNotice } from "../components/notice";
import { useT } from "../i18n/locale";
import { exactRubleDigits, parseRubles } from "../lib/money";

/** "2026-11-27T18:30" in the browser's zone, as a datetime-local input shows it. */
function localInputValue(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** "50, 80, 100" -> [50, 80, 100]; undefined when it is not a list of whole numbers. */
function parsePercents(text: string): number[] | undefined {
  const parts = text
    .split(/[\s,;]+/)
    .map((p) => p.replace(/%$/, ""))
    .filter((p) => p !== "");
  if (!parts.every((p) => /^\d+$/.test(p))) return undefined;
  return parts.map(Number);
}

/**
 * Changes one of the member's keys: name, daily budget, expiry, alert percents (PATCH /keys/{id},
 * docs/api.md "Changing a key"). Only what was changed is sent; the server says what it refuses.
 */
export function KeyEditForm({ k, onSaved, onCancel }: { k: CabinetKey; onSaved: (k: CabinetKey) => void; onCancel: () => void }) {
  const [name, setName] = useState(k.name ?? "");
  const [budget, setBudget] = useState(exactRubleDigits(k.daily_budget_microrub).replace(/\.?0+$/, ""));
  const [expires, setExpires] = useState(localInputValue(k.expires_at));
  const [percents, setPercents] = useState(k.budget_alert_percents.join(", "));
  const [error, setError] = useState<unknown>();
  const [saving, setSaving] = useState(false);
  const t = useT();

  const submit = (e: Event) => {
    e.preventDefault();
    const changes: Record<string, unknown> = {};
    if (name.trim() !== (k.name ?? "")) changes.name = name;
    const budgetMicrorub = parseRubles(budget);
    if (budgetMicrorub === undefined) return setError(new Error(t.errors.badAmount));
    if (budgetMicrorub !== k.daily_budget_microrub) changes.daily_budget_microrub = budgetMicrorub;
    const expiresAt = expires === "" ? null : new Date(expires).toISOString();
    if (expires !== localInputValue(k.expires_at)) changes.expires_at = expiresAt;
    const alertPercents = parsePercents(percents);
    if (alertPercents === undefined) return setError(new Error(t.errors.badPercents));
    if (alertPercents.join(",") !== k.budget_alert_percents.join(",")) changes.budget_alert_percents = alertPercents;
    if (Object.keys(changes).length === 0) return onCancel();
    setError(undefined);
    setSaving(true);
    api<CabinetKey>("PATCH", `/keys/${k.id}`, changes).then(
      (saved) => {
        setSaving(false);
        onSaved(saved);
      },
      (err: unknown) => {
        setSaving(false);
        setError(err);
      },
    );
  };

  const id = (field: string) => `edit-${k.id}-${field}`;
  return (
    <form onSubmit={submit} class="stack key-edit" aria-label={t.keyEdit.form(k.name ?? k.prefix)}>
      <label>
        {t.keys.name}
        <input name="name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <DailyBudgetField value={budget} onInput={setBudget} helpId={id("budget")} />
      <small id={id("budget")}>{t.keyEdit.budgetHelp}</small>
      <label>
        {t.keyEdit.expires}
        <input name="expires_at" type="datetime-local" value={expires} aria-describedby={id("expires")} onInput={(e) => setExpires(e.currentTarget.value)} />
      </label>
      <small id={id("expires")}>{t.keyEdit.expiresHelp}</small>
      <label>
        {t.keyEdit.percents}
        <input
          name="budget_alert_percents"
          value={percents}
          placeholder={t.keyEdit.percentsPlaceholder}
          aria-describedby={id("percents")}
          onInput={(e) => setPercents(e.currentTarget.value)}
        />
      </label>
      <small id={id("percents")}>{t.keyEdit.percentsHelp}</small>
      <ErrorNotice error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={saving}>
          {t.keyEdit.save}
        </button>{" "}
        <button type="button" class="quiet" onClick={onCancel}>
          {t.common.cancel}
        </button>
      </div>
    </form>
  );
}
