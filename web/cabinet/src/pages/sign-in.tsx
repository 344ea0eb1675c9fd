import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";

/** A member signs in with email and password (set from the invitation's link). */
export function SignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    api("POST", "/sign-in", { email, password }).then(onSignedIn, (err: unknown) => {
      setError(err);
      setBusy(false);
    });
  };
  return (
    <PublicFrame title="Sign in">
      <form onSubmit={submit} class="stack">
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
      <p class="aside">
        No password yet? Your operator sends you a one-time sign-in link. Operator?{" "}
        <a href="/cabinet/operator/sign-in" onClick={followLink}>
          Sign in with the admin token
        </a>
        .
      </p>
    </PublicFrame>
  );
}
