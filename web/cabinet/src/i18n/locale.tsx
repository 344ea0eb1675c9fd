import { createContext, type ComponentChildren } from "preact";
import type { CabinetLocale } from "@meter/contracts";
import { useContext, useEffect, useState } from "preact/hooks";
import { en, type Messages } from "./messages.en";
import { ru } from "./messages.ru";

/**
 * The cabinet's two languages. Messages are a typed catalog (messages.en.ts is the shape, ru must
 * match it key for key and argument for argument); numbers, money and dates go through Intl in the
 * chosen locale. A member's choice is kept server-side on their user (`PATCH /cabinet/api/me`), so it
 * holds in every browser they sign in from and wins over the browser's language; the operator (no
 * user record) and the sign-in pages keep the choice in this browser. Until anyone chooses, the
 * browser's first language decides.
 */
export type Locale = CabinetLocale;
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

/** Who is signed in, as far as their language goes. */
export interface Person {
  /** A user id, or "operator". */
  id: string;
  /** The language stored for them server-side (null: not chosen yet). */
  chosen: Locale | null;
  /** Stores a choice server-side; absent, it is kept in this browser only. */
  save?: (locale: Locale) => Promise<void>;
}

/** The locale for `who`: the one stored for them, else their choice in this browser, else this browser's last, else its language. */
export function initialLocale(who?: Person): Locale {
  return who?.chosen || (who && stored(`${STORAGE}:${who.id}`)) || stored(STORAGE) || browserLocale();
}

export interface I18n {
  locale: Locale;
  /** Intl's locale tag (en-US, ru-RU). */
  tag: string;
  t: Messages;
  /** Applies at once; resolves when the choice is kept (rejects when it could not be stored server-side). */
  setLocale(locale: Locale): Promise<void>;
}

const I18nContext = createContext<I18n>({ locale: "en", tag: INTL_TAG.en, t: en, setLocale: () => Promise.resolve() });

/**
 * Holds the chosen locale for `who`, derived as they render: the person signed in (or their stored
 * choice) changing shows their language in the same render, never the previous one first.
 */
export function I18nProvider({ who, children }: { who: Person | undefined; children: ComponentChildren }) {
  const key = who ? `${who.id} ${who.chosen ?? ""}` : "";
  /** A choice made on this page, for the person it was made by. */
  const [picked, setPicked] = useState<{ key: string; locale: Locale }>();
  const locale = picked?.key === key ? picked.locale : initialLocale(who);
  useEffect(() => {
    document.documentElement.lang = locale;
  }, [locale]);
  const choose = async (next: Locale) => {
    try {
      localStorage.setItem(STORAGE, next);
      if (who) localStorage.setItem(`${STORAGE}:${who.id}`, next);
    } catch {
      // Storage refused (a private window): the choice holds for this page only (and server-side for a member).
    }
    setPicked({ key, locale: next });
    await who?.save?.(next);
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
