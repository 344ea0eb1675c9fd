import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";
import { useT } from "../i18n/locale";

/** The operator types ADMIN_TOKEN once; from then on the browser holds a session, never the token. */
export function OperatorSignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<unknown>();
  const t = useT();
  const submit = (e: Event) => {
    e.preventDefault();
    setError(undefined);
    api("POST", "/operator/sign-in", { admin_token: token }).then(onSignedIn, setError);
  };
  return (
    <PublicFrame title={t.operatorSignIn.title}>
      <form onSubmit={submit} class="stack">
        <label>
          {t.operatorSignIn.token}
          <input type="password" name="admin_token" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          {t.operatorSignIn.button}
        </button>
      </form>
      <p class="aside">
        <a href="/cabinet/sign-in" onClick={followLink}>
          {t.operatorSignIn.member}
        </a>
      </p>
    </PublicFrame>
  );
}
