import { formatDateTime, userTimeZone } from "../lib/time";

/** A moment in the user's zone, and on hover in the budget day's zone (BUDGET_TIMEZONE). */
export function DateTime({ iso, budgetZone }: { iso: string; budgetZone: string }) {
  const mine = userTimeZone();
  const title =
    mine === budgetZone
      ? `${formatDateTime(iso, mine)} (${mine}, the budget day's zone too)`
      : `Budget day zone ${budgetZone}: ${formatDateTime(iso, budgetZone)}`;
  return (
    <time dateTime={iso} title={title}>
      {formatDateTime(iso, mine)}
    </time>
  );
}
