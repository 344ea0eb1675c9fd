import { useState } from "preact/hooks";
import type { PasswordChanged } from "@meter/contracts";
import { api } from "../api";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { PasswordFields } from "../components/password-fields";
import { useT } from "../i18n/locale";

/** A member changes their password with the current one; every other session of theirs ends, this one stays. */
export function PasswordPage() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<PasswordChanged | undefined>();
  const t = useT();
  const submit = (e: Event) => {
    e.preventDefault();
    if (next !== again) return setError(new Error(t.password.differNew));
    setError(undefined);
    setDone(undefined);
    api<PasswordChanged>("POST", "/password", { current_password: current, new_password: next }).then((answer) => {
      setCurrent("");
      setNext("");
      setAgain("");
      setDone(answer);
    }, setError);
  };
  return (
    <Layout title={t.nav.password}>
      <section aria-labelledby="password-heading">
        <h2 id="password-heading">{t.password.heading}</h2>
        <p>{t.password.intro}</p>
        <form onSubmit={submit} class="stack">
          <label>
            {t.password.current}
            <input
              type="password"
              name="current-password"
              autoComplete="current-password"
              required
              value={current}
              onInput={(e) => setCurrent(e.currentTarget.value)}
            />
          </label>
          <PasswordFields
            password={next}
            again={again}
            onPassword={setNext}
            onAgain={setAgain}
            againLabel={t.password.newAgain}
            ruleId="new-password-rule"
            differ={t.password.differNew}
          />
          <ErrorNotice error={error} />
          {done && <Done>{t.password.changed(done.signed_out)}</Done>}
          <button type="submit" class="primary">
            {t.password.button}
          </button>
        </form>
      </section>
    </Layout>
  );
}
