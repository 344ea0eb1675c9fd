import { useT } from "../i18n/locale";

/** A key's daily budget in rubles, as typed (read with parseRubles); `helpId` names the hint under it. */
export function DailyBudgetField({ value, onInput, helpId }: { value: string; onInput: (value: string) => void; helpId: string }) {
  const t = useT();
  return (
    <label>
      {t.keys.budget}
      <input name="daily_budget" inputMode="decimal" required value={value} aria-describedby={helpId} onInput={(e) => onInput(e.currentTarget.value)} />
    </label>
  );
}
