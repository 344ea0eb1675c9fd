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

type DateField = "year" | "month" | "day";
const SAMPLE_DAY = new Date(Date.UTC(2026, 10, 23));
const numericDate = (locale?: string) => new Intl.DateTimeFormat(locale, { year: "numeric", month: "2-digit", day: "2-digit", timeZone: "UTC" });

/** The order of day, month and year in the locale's numeric dates: month first in en-US, day first in ru or de. */
function dateOrder(locale?: string): DateField[] {
  return numericDate(locale)
    .formatToParts(SAMPLE_DAY)
    .flatMap((p) => (p.type === "year" || p.type === "month" || p.type === "day" ? [p.type] : []));
}

/** A day ("2026-11-23") as the locale writes it: "11/23/2026", "23.11.2026", "2026-11-23", ... */
export function formatLocalDay(day: string, locale?: string): string {
  return numericDate(locale).format(new Date(`${day}T00:00:00Z`));
}

/** What a typed day looks like in the locale, for a placeholder: "mm/dd/yyyy", "dd.mm.yyyy", ... */
export function localDayPattern(locale?: string): string {
  const letters: Record<DateField, string> = { year: "yyyy", month: "mm", day: "dd" };
  return numericDate(locale)
    .formatToParts(SAMPLE_DAY)
    .map((p) => (p.type === "year" || p.type === "month" || p.type === "day" ? letters[p.type] : p.value))
    .join("");
}

/**
 * A day typed in the locale's order, with any separators ("23.11.2026" in ru, "11/23/2026" in en-US),
 * or as "2026-11-23" anywhere, as "2026-11-23"; undefined when it is no calendar day.
 */
export function parseLocalDay(text: string, locale?: string): string | undefined {
  const iso = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$/.exec(text);
  const numbers = iso ? iso.slice(1) : text.split(/\D+/).filter(Boolean);
  if (numbers.length !== 3) return undefined;
  const order: DateField[] = iso ? ["year", "month", "day"] : dateOrder(locale);
  const value = (f: DateField) => Number(numbers[order.indexOf(f)]);
  const [y, m, d] = [value("year"), value("month"), value("day")];
  if (!(y >= 1000 && y <= 9999)) return undefined;
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return undefined;
  return date.toISOString().slice(0, 10);
}
