import { useState } from "preact/hooks";
import { useI18n, useT } from "../i18n/locale";
import { formatLocalDay, localDayPattern, parseLocalDay, userTimeZone } from "../lib/time";

/** A labelled select of a list filter: "" (the first choice) filters nothing. */
export function ChoiceFilter<T extends string>({
  label,
  name,
  value,
  any,
  options,
  onChange,
}: {
  label: string;
  name?: string;
  value: T | "";
  /** The first choice's words, e.g. "Any". */
  any: string;
  options: { value: T; label: string }[];
  onChange: (value: T | "") => void;
}) {
  return (
    <label>
      {label}
      <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value as T | "")}>
        <option value="">{any}</option>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

export interface DayFilter {
  /** The chosen day (YYYY-MM-DD in the user's zone), or "" for every day. */
  day: string;
  text: string;
  setText(text: string): void;
  /** The typed day could not be read (shown once the user is done typing: Enter or leaving the field). */
  unread: boolean;
  /** Reads the typed day and filters by it. */
  choose(): void;
  clear(): void;
}

/** A day typed as the chosen language writes dates; `onChange` runs when the chosen day changes. */
export function useDayFilter(onChange: () => void, initial = ""): DayFilter {
  const { tag } = useI18n();
  const [day, setDay] = useState(initial);
  const [text, setText] = useState(initial ? formatLocalDay(initial, tag) : "");
  const [unread, setUnread] = useState(false);
  return {
    day,
    text,
    setText,
    unread,
    choose: () => {
      const typedDay = text.trim() ? parseLocalDay(text, tag) : "";
      setUnread(typedDay === undefined);
      if (typedDay === undefined) return;
      setDay(typedDay);
      onChange();
      if (typedDay) setText(formatLocalDay(typedDay, tag));
    },
    clear: () => {
      setText("");
      setUnread(false);
      setDay("");
      onChange();
    },
  };
}

/** The day field of a filter bar, and what to type when it cannot be read (`example`: with today as an example). */
export function DayField({ filter, example, label, name = "day" }: { filter: DayFilter; example?: boolean; label?: string; name?: string }) {
  const { t, tag } = useI18n();
  const errorId = `${name}-error`;
  return (
    <>
      <label>
        {label ?? t.filters.day(userTimeZone())}
        <input
          name={name}
          inputMode="numeric"
          placeholder={localDayPattern(tag)}
          aria-invalid={filter.unread}
          aria-describedby={filter.unread ? errorId : undefined}
          value={filter.text}
          onInput={(e) => filter.setText(e.currentTarget.value)}
          onChange={filter.choose}
        />
      </label>
      {filter.unread && (
        <small id={errorId} class="field-error">
          {t.errors.badDay(localDayPattern(tag), example ? formatLocalDay(new Date().toISOString().slice(0, 10), tag) : null)}
        </small>
      )}
    </>
  );
}

/** The CSV of exactly the rows the filter shows. */
export function CsvLink({ href, title }: { href: string; title: string }) {
  const t = useT();
  return (
    <a class="button" href={href} download title={title}>
      {t.common.exportCsv}
    </a>
  );
}
