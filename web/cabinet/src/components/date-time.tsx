import { useI18n } from "../i18n/locale";
import { formatDateTime, userTimeZone } from "../lib/time";

/** A moment in the user's zone and language, and on hover in the budget day's zone (BUDGET_TIMEZONE). */
export function DateTime({ iso, budgetZone }: { iso: string; budgetZone: string }) {
  const { tag, t } = useI18n();
  const mine = userTimeZone();
  const title =
    mine === budgetZone ? t.time.sameZone(formatDateTime(iso, mine, tag), mine) : t.time.budgetZone(budgetZone, formatDateTime(iso, budgetZone, tag));
  return (
    <time dateTime={iso} title={title}>
      {formatDateTime(iso, mine, tag)}
    </time>
  );
}
