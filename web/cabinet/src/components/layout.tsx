import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api";
import { LOCALES, useI18n } from "../i18n/locale";
import type { Messages } from "../i18n/messages.en";
import { userTimeZone } from "../lib/time";
import { followLink, usePath } from "../router";
import { useSession, type Me } from "../session";
import { DateTime } from "./date-time";
import { ErrorNotice } from "./notice";

type Page = { href: string; label: keyof Messages["nav"] };
const MEMBER_PAGES: Page[] = [
  { href: "/cabinet", label: "overview" },
  { href: "/cabinet/keys", label: "keys" },
  { href: "/cabinet/ledger", label: "ledger" },
  { href: "/cabinet/requests", label: "requests" },
  { href: "/cabinet/models", label: "models" },
  { href: "/cabinet/files", label: "files" },
  { href: "/cabinet/webhooks", label: "webhooks" },
  { href: "/cabinet/password", label: "password" },
];
const OPERATOR_PAGES: Page[] = [
  { href: "/cabinet/operator", label: "organizations" },
  { href: "/cabinet/operator/users", label: "users" },
  { href: "/cabinet/operator/catalog", label: "catalog" },
  { href: "/cabinet/operator/holds", label: "holds" },
  { href: "/cabinet/operator/requests", label: "requests" },
  { href: "/cabinet/operator/providers", label: "providers" },
  { href: "/cabinet/operator/health", label: "health" },
];

/** The first page keeps focus where the browser put it; later ones move it to their heading for screen readers. */
let firstPage = true;

/**
 * Every signed-in page: skip link, navigation, organization switcher (not on pages whose contents are
 * the user's in every organization), the language, who is signed in, the page, the zones in use. On a
 * phone the header is two short rows (styles.css): the brand, the language and the account's buttons,
 * then the navigation in one line that scrolls sideways.
 */
export function Layout({ title, children, switcher = true }: { title: string; children: ComponentChildren; switcher?: boolean }) {
  const { me } = useSession();
  const { t } = useI18n();
  const path = usePath();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = t.layout.pageTitle(title);
    if (!firstPage) heading.current?.focus();
    firstPage = false;
  }, [title]);
  const pages = me.role === "member" ? MEMBER_PAGES : OPERATOR_PAGES;
  return (
    <>
      <a class="skip" href="#main">
        {t.layout.skip}
      </a>
      <header class="top">
        <span class="brand">Meter</span>
        <LanguageSwitch />
        <Account me={me} />
        <nav aria-label={t.layout.navigation}>
          <ul>
            {pages.map((p) => (
              <li key={p.href}>
                <a href={p.href} onClick={followLink} aria-current={path === p.href ? "page" : undefined}>
                  {t.nav[p.label]}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {me.role === "member" && switcher && <OrganizationSwitcher />}
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {children}
      </main>
      <footer class="zones">
        {t.layout.zones(userTimeZone(), me.budget_timezone)} <DateTime iso={me.session.expires_at} budgetZone={me.budget_timezone} />.
      </footer>
    </>
  );
}

/** The cabinet's language: kept for the person signed in (a member's on their user, i18n/locale.tsx). */
export function LanguageSwitch() {
  const { locale, setLocale, t } = useI18n();
  const [error, setError] = useState<unknown>();
  return (
    <>
      <label class="language">
        <span class="visually-hidden">{t.common.language}</span>
        <select
          name="language"
          value={locale}
          onChange={(e) => {
            setError(undefined);
            setLocale(e.currentTarget.value as typeof locale).catch(setError);
          }}
        >
          {LOCALES.map((l) => (
            <option key={l.value} value={l.value} lang={l.value}>
              {l.label}
            </option>
          ))}
        </select>
      </label>
      {error !== undefined && (
        <p class="notice notice-error" role="alert">
          {t.common.languageNotKept}
        </p>
      )}
    </>
  );
}

function OrganizationSwitcher() {
  const { me, setMe } = useSession();
  const { t } = useI18n();
  const [error, setError] = useState<unknown>();
  if (me.role !== "member") return null;
  if (me.organizations.length === 0) return <p class="switcher">{t.layout.noOrganization}</p>;
  return (
    <div class="switcher">
      <label for="organization">{t.layout.organization}</label>
      <select
        id="organization"
        value={me.organization_id ?? ""}
        onChange={(e) => {
          const id = (e.currentTarget as HTMLSelectElement).value;
          api<Me>("PUT", "/session/organization", { organization_id: id }).then(setMe, setError);
        }}
      >
        {me.organizations.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name}
          </option>
        ))}
      </select>
      <ErrorNotice error={error} />
    </div>
  );
}

function Account({ me }: { me: Me }) {
  const { signOut } = useSession();
  const { t } = useI18n();
  return (
    <div class="account">
      <span class="who">{me.role === "member" ? me.user.email : t.layout.operator}</span>
      <button type="button" onClick={() => void signOut(false)}>
        {t.layout.signOut}
      </button>
      <button type="button" class="quiet" onClick={() => void signOut(true)} title={t.layout.signOutEverywhereTitle}>
        {t.layout.signOutEverywhere}
      </button>
    </div>
  );
}
