import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, mayHaveSession, onSignedOut } from "./api";
import { Layout } from "./components/layout";
import { ErrorNotice } from "./components/notice";
import { I18nProvider, useT, type Person } from "./i18n/locale";
import { FilesPage } from "./pages/files";
import { KeysPage } from "./pages/keys";
import { LedgerPage } from "./pages/ledger";
import { ModelsPage } from "./pages/models";
import { RequestsPage } from "./pages/requests";
import { CatalogPage } from "./pages/operator/catalog";
import { HealthPage } from "./pages/operator/health";
import { HoldsPage } from "./pages/operator/holds";
import { OperatorRequestsPage } from "./pages/operator/requests";
import { OrganizationPage, organizationIdOf } from "./pages/operator/organization";
import { OrganizationsPage } from "./pages/operator/organizations";
import { ProvidersPage } from "./pages/operator/providers";
import { UsersPage } from "./pages/operator/users";
import { OperatorSignInPage } from "./pages/operator-sign-in";
import { OverviewPage } from "./pages/overview";
import { PasswordPage } from "./pages/password";
import { SignInPage } from "./pages/sign-in";
import { WebhooksPage } from "./pages/webhooks";
import { WelcomePage } from "./pages/welcome";
import { navigate, usePath } from "./router";
import { SessionContext, type Me } from "./session";

const MEMBER_ROUTES: Record<string, FunctionComponent> = {
  "/cabinet": OverviewPage,
  "/cabinet/keys": KeysPage,
  "/cabinet/ledger": LedgerPage,
  "/cabinet/requests": RequestsPage,
  "/cabinet/models": ModelsPage,
  "/cabinet/files": FilesPage,
  "/cabinet/webhooks": WebhooksPage,
  "/cabinet/password": PasswordPage,
};
const OPERATOR_ROUTES: Record<string, FunctionComponent> = {
  "/cabinet/operator": OrganizationsPage,
  "/cabinet/operator/users": UsersPage,
  "/cabinet/operator/catalog": CatalogPage,
  "/cabinet/operator/holds": HoldsPage,
  "/cabinet/operator/requests": OperatorRequestsPage,
  "/cabinet/operator/providers": ProvidersPage,
  "/cabinet/operator/health": HealthPage,
};
const SIGN_IN_PAGES = new Set(["/cabinet/sign-in", "/cabinet/operator/sign-in"]);

/** The cabinet in the language of whoever is signed in (or of the browser, before sign-in). */
export function App() {
  const [who, setWho] = useState<Person | undefined>();
  return (
    <I18nProvider who={who}>
      <Pages onWho={setWho} />
    </I18nProvider>
  );
}

/** Who is signed in decides which pages exist: a member's, the operator's, or the sign-in pages. */
function Pages({ onWho }: { onWho: (who: Person | undefined) => void }) {
  const t = useT();
  const path = usePath();
  /** undefined while asking, null when nobody is signed in. */
  const [me, setMeOnly] = useState<Me | null | undefined>(undefined);
  // Who is signed in and their language change together, in one render: a member's language is kept on
  // their user, the operator's in this browser (i18n/locale.tsx); no page shows in the wrong one first.
  const setMe = (m: Me | null) => {
    onWho(
      !m
        ? undefined
        : m.role === "member"
          ? { id: m.user.id, chosen: m.user.locale, save: (locale) => api<Me>("PATCH", "/me", { locale }).then(setMe) }
          : { id: "operator", chosen: null },
    );
    setMeOnly(m);
  };
  const [error, setError] = useState<unknown>();
  const load = (): Promise<Me | null> =>
    // No CSRF cookie, no session (both are set and cleared together): asking would only log a 401 in
    // the browser's console on every visit before sign-in.
    !mayHaveSession()
      ? Promise.resolve((setMe(null), null))
      : api<Me>("GET", "/me").then(
          (m) => (setMe(m), m),
          (e: unknown) => {
            if (e instanceof ApiError && e.status === 401) setMe(null);
            else setError(e);
            return null;
          },
        );
  useEffect(() => {
    onSignedOut(() => setMe(null));
    void load();
  }, []);
  const homeOf = (m: Me) => (m.role === "member" ? "/cabinet" : "/cabinet/operator");
  const routes = me ? (me.role === "member" ? MEMBER_ROUTES : OPERATOR_ROUTES) : {};
  // Signed in, on a sign-in page or on the other role's start page: to this role's start page. (The
  // welcome page stays: a signed-in member may be resetting their password with a new link.)
  const misplaced = !!me && !routes[path] && (path === "/cabinet" || path === "/cabinet/operator" || SIGN_IN_PAGES.has(path));
  useEffect(() => {
    if (me && misplaced) navigate(homeOf(me), { replace: true });
  }, [me, misplaced]);

  const signedIn = () => {
    void load().then((m) => m && navigate(homeOf(m), { replace: true }));
  };
  const signOut = async (everywhere: boolean) => {
    await api("POST", "/sign-out", { everywhere }).catch(() => undefined);
    setMe(null);
    navigate("/cabinet/sign-in", { replace: true });
  };

  if (path === "/cabinet/welcome") return <WelcomePage onSignedIn={signedIn} />;
  if (me === undefined || misplaced) return error ? <ErrorNotice error={error} /> : <p class="boot">{t.common.loading}</p>;
  if (me === null) {
    if (path === "/cabinet/operator/sign-in") return <OperatorSignInPage onSignedIn={signedIn} />;
    return <SignInPage onSignedIn={signedIn} />;
  }

  const home = homeOf(me);
  const orgId = me.role === "operator" ? organizationIdOf(path) : undefined;
  const Page = routes[path];
  return (
    <SessionContext.Provider value={{ me, setMe, signOut }}>
      {Page ? (
        <Page />
      ) : orgId ? (
        <OrganizationPage id={orgId} />
      ) : (
        <Layout title={t.layout.notFound}>
          <p>
            {me.role === "member" ? t.layout.notFoundMember : t.layout.notFoundOperator}{" "}
            <a href={home} onClick={(e) => (e.preventDefault(), navigate(home))}>
              {t.layout.startPage}
            </a>
          </p>
        </Layout>
      )}
    </SessionContext.Provider>
  );
}
