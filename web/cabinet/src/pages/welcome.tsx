import { useState } from "preact/hooks";
import { api } from "../api";
import { ErrorNotice } from "../components/notice";
import { MIN_PASSWORD, PasswordFields } from "../components/password-fields";
import { followLink } from "../router";
import { PublicFrame } from "./public-frame";
import { useT } from "../i18n/locale";

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
  const t = useT();
  const submit = (e: Event) => {
    e.preventDefault();
    if (password !== again) return setError(new Error(t.password.differ));
    setError(undefined);
    api("POST", "/invitations/accept", { token, password }).then(onSignedIn, setError);
  };
  if (!token) {
    return (
      <PublicFrame title={t.welcome.title}>
        <p role="alert" class="notice notice-error">
          {t.welcome.noInvitation}
        </p>
        <p>
          <a href="/cabinet/sign-in" onClick={followLink}>
            {t.signIn.button}
          </a>
        </p>
      </PublicFrame>
    );
  }
  return (
    <PublicFrame title={t.welcome.choose}>
      <p>{t.welcome.intro(MIN_PASSWORD)}</p>
      <form onSubmit={submit} class="stack">
        <PasswordFields
          password={password}
          again={again}
          onPassword={setPassword}
          onAgain={setAgain}
          againLabel={t.password.again}
          ruleId="password-rule"
          differ={t.password.differ}
        />
        <ErrorNotice error={error} />
        <button type="submit" class="primary">
          {t.welcome.button}
        </button>
      </form>
    </PublicFrame>
  );
}
