import { createContext, type ComponentChildren } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { en, type Messages } from "./messages.en";
import { ru } from "./messages.ru";

/**
 * The cabinet's two languages. Messages are a typed catalog (messages.en.ts is the shape, ru must
 * match it key for key and argument for argument); numbers, money and dates go through Intl in the
 * chosen locale. The browser's first language decides until the person chooses, and the choice is
 * kept per person (and for the sign-in pages, per browser).
 */
export type Locale = "en" | "ru";
export const LOCALES: readonly { value: Locale; label: string }[] = [
  { value: "en", label: "English" },
  { value: "ru", label: "Русский" },
];
const CATALOGS: Record<Locale, Messages> = { en, ru };
/** Intl's tag for each: the numbers, money and dates of that language. */
const INTL_TAG: Record<Locale, string> = { en: "en-US", ru: "ru-RU" };

const STORAGE = "meter_locale";

function stored(key: string): Locale | undefined {
  try {
    const v = localStorage.getItem(key);
    return v === "en" || v === "ru" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The browser's first language, if it is one of ours; English otherwise. */
export function browserLocale(): Locale {
  const first = (navigator.languages?.[0] ?? navigator.language ?? "en").toLowerCase();
  return first.startsWith("ru") ? "ru" : "en";
}

/** The locale for `who` (a user id, "operator", or nobody yet): their choice, else this browser's last, else its language. */
export function initialLocale(who?: string): Locale {
  return (who && stored(`${STORAGE}:${who}`)) || stored(STORAGE) || browserLocale();
}

export interface I18n {
  locale: Locale;
  /** Intl's locale tag (en-US, ru-RU). */
  tag: string;
  t: Messages;
  setLocale(locale: Locale): void;
}

const I18nContext = createContext<I18n>({ locale: "en", tag: INTL_TAG.en, t: en, setLocale: () => undefined });

/** Holds the chosen locale for `who`; re-reads it when the person signed in changes. */
export function I18nProvider({ who, children }: { who: string | undefined; children: ComponentChildren }) {
  const [locale, setLocale] = useState<Locale>(() => initialLocale(who));
  useEffect(() => setLocale(initialLocale(who)), [who]);
  useEffect(() => {
    document.documentElement.lang = locale;
  }, [locale]);
  const choose = (next: Locale) => {
    try {
      localStorage.setItem(STORAGE, next);
      if (who) localStorage.setItem(`${STORAGE}:${who}`, next);
    } catch {
      // Storage refused (a private window): the choice holds for this page only.
    }
    setLocale(next);
  };
  return <I18nContext.Provider value={{ locale, tag: INTL_TAG[locale], t: CATALOGS[locale], setLocale: choose }}>{children}</I18nContext.Provider>;
}

export function useI18n(): I18n {
  return useContext(I18nContext);
}

/** The messages of the chosen language. */
export function useT(): Messages {
  return useContext(I18nContext).t;
}
