import { useState } from "preact/hooks";
import type { PasswordChanged } from "@meter/contracts";
import { api } from "../api";
import { Layout } from "../components/layout";
import { Done, ErrorNotice } from "../components/notice";
import { PasswordFields } from "../components/password-fields";

/** A member changes their password with the current one; every other session of theirs ends, this one stays. */
export function PasswordPage() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<PasswordChanged | undefined>();
  const submit = (e: Event) => {
    e.preventDefault();
    if (next !== again) return setError(new Error("the two new passwords differ"));
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
    <Layout title="Password">
      <section aria-labelledby="password-heading">
        <h2 id="password-heading">Change your password</h2>
        <p>Your other sessions, in every other browser, end when it changes; this one stays signed in.</p>
        <form onSubmit={submit} class="stack">
          <label>
            Current password
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
            againLabel="The new password again"
            ruleId="new-password-rule"
            differ="The two new passwords differ."
          />
          <ErrorNotice error={error} />
          {done && (
            <Done>Your password is changed. {done.signed_out === 1 ? "1 other session was" : `${done.signed_out} other sessions were`} signed out.</Done>
          )}
          <button type="submit" class="primary">
            Change password
          </button>
        </form>
      </section>
    </Layout>
  );
}
