import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api";
import { userTimeZone } from "../lib/time";
import { followLink, usePath } from "../router";
import { useSession, type Me } from "../session";
import { DateTime } from "./date-time";
import { ErrorNotice } from "./notice";

const MEMBER_PAGES = [
  { href: "/cabinet", label: "Overview" },
  { href: "/cabinet/keys", label: "API keys" },
  { href: "/cabinet/ledger", label: "Ledger" },
  { href: "/cabinet/requests", label: "Requests" },
  { href: "/cabinet/models", label: "Models and prices" },
  { href: "/cabinet/files", label: "Files and jobs" },
  { href: "/cabinet/webhooks", label: "Webhooks" },
  { href: "/cabinet/password", label: "Password" },
];
const OPERATOR_PAGES = [
  { href: "/cabinet/operator", label: "Organizations" },
  { href: "/cabinet/operator/users", label: "Users and invitations" },
  { href: "/cabinet/operator/catalog", label: "Model catalog" },
  { href: "/cabinet/operator/holds", label: "Stale holds" },
  { href: "/cabinet/operator/requests", label: "Requests" },
  { href: "/cabinet/operator/providers", label: "Upstream providers" },
  { href: "/cabinet/operator/health", label: "System health" },
];

/** The first page keeps focus where the browser put it; later ones move it to their heading for screen readers. */
let firstPage = true;

/**
 * Every signed-in page: skip link, navigation, organization switcher (not on pages whose contents are
 * the user's in every organization), who is signed in, the page, the zones in use.
 */
export function Layout({ title, children, switcher = true }: { title: string; children: ComponentChildren; switcher?: boolean }) {
  const { me } = useSession();
  const path = usePath();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Meter cabinet`;
    if (!firstPage) heading.current?.focus();
    firstPage = false;
  }, [title]);
  const pages = me.role === "member" ? MEMBER_PAGES : OPERATOR_PAGES;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Meter</span>
        <nav aria-label="Cabinet">
          <ul>
            {pages.map((p) => (
              <li key={p.href}>
                <a href={p.href} onClick={followLink} aria-current={path === p.href ? "page" : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {me.role === "member" && switcher && <OrganizationSwitcher />}
        <Account me={me} />
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {children}
      </main>
      <footer class="zones">
        Times are shown in your time zone, {userTimeZone()}; hover one for the budget day's zone. Budget days (daily budgets, the spend chart) start at 00:00{" "}
        {me.budget_timezone}. This session ends <DateTime iso={me.session.expires_at} budgetZone={me.budget_timezone} />.
      </footer>
    </>
  );
}

function OrganizationSwitcher() {
  const { me, setMe } = useSession();
  const [error, setError] = useState<unknown>();
  if (me.role !== "member") return null;
  if (me.organizations.length === 0) return <p class="switcher">No organization yet</p>;
  return (
    <div class="switcher">
      <label for="organization">Organization</label>
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
  return (
    <div class="account">
      <span class="who">{me.role === "member" ? me.user.email : "Operator"}</span>
      <button type="button" onClick={() => void signOut(false)}>
        Sign out
      </button>
      <button type="button" class="quiet" onClick={() => void signOut(true)} title="Ends every session of yours, in every browser">
        Sign out everywhere
      </button>
    </div>
  );
}
