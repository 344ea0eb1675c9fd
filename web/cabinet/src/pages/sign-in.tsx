import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { useT } from "../i18n/locale";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";

/** A member signs in with email and password (set from the invitation's link). */
export function SignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const t = useT();
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
    <PublicFrame title={t.signIn.title}>
      <form onSubmit={submit} class="stack">
        <label>
          {t.signIn.email}
          <input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          {t.signIn.password}
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
          {t.signIn.button}
        </button>
      </form>
      <p class="aside">
        {t.signIn.aside}{" "}
        <a href="/cabinet/operator/sign-in" onClick={followLink}>
          {t.signIn.operatorLink}
        </a>
        .
      </p>
    </PublicFrame>
  );
}
