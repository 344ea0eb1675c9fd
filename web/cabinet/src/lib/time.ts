/** The browser's own zone: times are shown in it, and beside it in the budget day's zone. */
export function userTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function formatDateTime(iso: string, timeZone: string, locale?: string): string {
  return new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "medium", timeZone }).format(new Date(iso));
}

/** A budget day ("2026-11-23") as a short label ("Nov 23"), without any zone shifting it. */
export function formatDay(day: string, locale?: string): string {
  return new Intl.DateTimeFormat(locale, { month: "short", day: "numeric", timeZone: "UTC" }).format(new Date(`${day}T00:00:00Z`));
}

/** How far `timeZone`'s wall clock is ahead of UTC at `instant` (ms; DST included). */
function offsetMs(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(new Date(instant));
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  const wall = Date.UTC(part("year"), part("month") - 1, part("day"), part("hour"), part("minute"), part("second"));
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The instant `day` begins in `timeZone`: the second guess corrects for a DST change in between. */
export function startOfDay(day: string, timeZone: string): Date {
  const [y, m, d] = day.split("-").map(Number);
  const midnight = Date.UTC(y!, m! - 1, d!);
  const guess = midnight - offsetMs(midnight, timeZone);
  return new Date(midnight - offsetMs(guess, timeZone));
}

/** [start, end) of a calendar day in a zone, as the ledger's `since` and `until`. */
export function dayBounds(day: string, timeZone: string): { since: string; until: string } {
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return { since: startOfDay(day, timeZone).toISOString(), until: startOfDay(next, timeZone).toISOString() };
}
