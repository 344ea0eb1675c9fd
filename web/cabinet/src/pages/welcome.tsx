import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { MIN_PASSWORD, PasswordFields } from "../components/password-fields";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";

/** The token rides in the link's fragment; it is read once and taken out of the address bar and history. */
function takeInvitationToken(): string | undefined {
  const token = new URLSearchParams(location.hash.slice(1)).get("invitation") ?? undefined;
  if (location.hash) history.replaceState(null, "", location.pathname);
  return token;
}

/** An invited member chooses a password with the one-time link, and is signed in. */
export function WelcomePage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token] = useState(takeInvitationToken);
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState<unknown>();
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
        <PasswordFields
          password={password}
          again={again}
          onPassword={setPassword}
          onAgain={setAgain}
          againLabel="The same password again"
          ruleId="password-rule"
          differ="The two passwords differ."
        />
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          Set password and sign in
        </button>
      </form>
    </PublicFrame>
  );
}
