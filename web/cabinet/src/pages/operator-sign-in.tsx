import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";

/** The operator types ADMIN_TOKEN once; from then on the browser holds a session, never the token. */
export function OperatorSignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<unknown>();
  const submit = (e: Event) => {
    e.preventDefault();
    setError(undefined);
    api("POST", "/operator/sign-in", { admin_token: token }).then(onSignedIn, setError);
  };
  return (
    <PublicFrame title="Operator sign-in">
      <form onSubmit={submit} class="stack">
        <label>
          Admin token
          <input type="password" name="admin_token" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Sign in as operator
        </button>
      </form>
      <p class="aside">
        <a href="/cabinet/sign-in" onClick={followLink}>
          Member sign-in
        </a>
      </p>
    </PublicFrame>
  );
}
