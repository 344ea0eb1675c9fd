import type { FunctionComponent } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, onSignedOut } from "./api";
import { Layout } from "./components/layout";
import { ErrorNotice } from "./components/notice";
import { FilesPage } from "./pages/files";
import { KeysPage } from "./pages/keys";
import { LedgerPage } from "./pages/ledger";
import { CatalogPage } from "./pages/operator/catalog";
import { HoldsPage } from "./pages/operator/holds";
import { OrganizationsPage } from "./pages/operator/organizations";
import { UsersPage } from "./pages/operator/users";
import { OperatorSignInPage } from "./pages/operator-sign-in";
import { OverviewPage } from "./pages/overview";
import { PasswordPage } from "./pages/password";
import { SignInPage } from "./pages/sign-in";
import { WelcomePage } from "./pages/welcome";
import { navigate, usePath } from "./router";
import { SessionContext, type Me } from "./session";

const MEMBER_ROUTES: Record<string, FunctionComponent> = {
  "/cabinet": OverviewPage,
  "/cabinet/keys": KeysPage,
  "/cabinet/ledger": LedgerPage,
  "/cabinet/files": FilesPage,
  "/cabinet/password": PasswordPage,
};
const OPERATOR_ROUTES: Record<string, FunctionComponent> = {
  "/cabinet/operator": OrganizationsPage,
  "/cabinet/operator/users": UsersPage,
  "/cabinet/operator/catalog": CatalogPage,
  "/cabinet/operator/holds": HoldsPage,
};
const SIGN_IN_PAGES = new Set(["/cabinet/sign-in", "/cabinet/operator/sign-in"]);

/** Who is signed in decides which pages exist: a member's, the operator's, or the sign-in pages. */
export function App() {
  const path = usePath();
  /** undefined while asking, null when nobody is signed in. */
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [error, setError] = useState<unknown>();

  const load = (): Promise<Me | null> =>
    api<Me>("GET", "/me").then(
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
  if (me === undefined || misplaced) return error ? <ErrorNotice error={error} /> : <p class="boot">Loading the cabinet…</p>;
  if (me === null) {
    if (path === "/cabinet/operator/sign-in") return <OperatorSignInPage onSignedIn={signedIn} />;
    return <SignInPage onSignedIn={signedIn} />;
  }

  const home = homeOf(me);
  const Page = routes[path];
  return (
    <SessionContext.Provider value={{ me, setMe, signOut }}>
      {Page ? (
        <Page />
      ) : (
        <Layout title="Not found">
          <p>
            There is no such page {me.role === "member" ? "for members" : "for the operator"}.{" "}
            <a href={home} onClick={(e) => (e.preventDefault(), navigate(home))}>
              Go to the start page
            </a>
            .
          </p>
        </Layout>
      )}
    </SessionContext.Provider>
  );
}
