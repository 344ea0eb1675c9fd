import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";

/** The token rides in the link's fragment; it is read once and taken out of the address bar and history. */
function takeInvitationToken(): string | undefined {
  const token = new URLSearchParams(location.hash.slice(1)).get("invitation") ?? undefined;
  if (location.hash) history.replaceState(null, "", location.pathname);
  return token;
}

const MIN_PASSWORD = 10;

/** An invited member chooses a password with the one-time link, and is signed in. */
export function WelcomePage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token] = useState(takeInvitationToken);
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState<unknown>();
  const mismatch = again.length > 0 && again !== password;
  const submit = (e: Event) => {
    e.preventDefault();
    if (password !== again) return setError(new Error("the two passwords differ"));
    setError(undefined);
    api("POST", "/invitations/accept", { token, password }).then(onSignedIn, setError);
  };
  if (!token) {
    return (
      <PublicFrame title="Welcome">
        <p role="alert" class="notice notice-error">
          This address has no invitation in it. Open the whole link from your invitation, or ask your operator for a new one.
        </p>
        <p>
          <a href="/cabinet/sign-in" onClick={followLink}>
            Sign in
          </a>
        </p>
      </PublicFrame>
    );
  }
  return (
    <PublicFrame title="Choose your password">
      <p>The link works once. Choose a password of at least {MIN_PASSWORD} characters; you will sign in with it and your email from now on.</p>
      <form onSubmit={submit} class="stack">
        <label>
          New password
          <input
            type="password"
            name="new-password"
            autoComplete="new-password"
            required
            minLength={MIN_PASSWORD}
            aria-describedby="password-rule"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <small id="password-rule">At least {MIN_PASSWORD} characters.</small>
        <label>
          The same password again
          <input
            type="password"
            name="confirm-password"
            autoComplete="new-password"
            required
            aria-invalid={mismatch}
            value={again}
            onInput={(e) => setAgain(e.currentTarget.value)}
          />
        </label>
        {mismatch && <small class="field-error">The two passwords differ.</small>}
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Set password and sign in
        </button>
      </form>
    </PublicFrame>
  );
}
