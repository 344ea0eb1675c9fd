import { useT } from "../i18n/locale";
/** The contracts' Password minimum (only types are imported into the pages: the bundle stays free of zod). */
export const MIN_PASSWORD = 10;

/**
 * A new password typed twice, with its rule and, once the second differs, what is wrong. The words differ
 * by page ("The new password again" beside a current password, "The same password again" alone).
 */
export function PasswordFields({
  password,
  again,
  onPassword,
  onAgain,
  againLabel,
  ruleId,
  differ,
}: {
  password: string;
  again: string;
  onPassword: (value: string) => void;
  onAgain: (value: string) => void;
  againLabel: string;
  ruleId: string;
  /** Said under the second field while it differs from the first. */
  differ: string;
}) {
  const t = useT();
  const mismatch = again.length > 0 && again !== password;
  return (
    <>
      <label>
        {t.password.newPassword}
        <input
          type="password"
          name="new-password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          aria-describedby={ruleId}
          value={password}
          onInput={(e) => onPassword(e.currentTarget.value)}
        />
      </label>
      <small id={ruleId}>{t.password.rule(MIN_PASSWORD)}</small>
      <label>
        {againLabel}
        <input
          type="password"
          name="confirm-password"
          autoComplete="new-password"
          required
          aria-invalid={mismatch}
          value={again}
          onInput={(e) => onAgain(e.currentTarget.value)}
        />
      </label>
      {mismatch && <small class="field-error">{differ}</small>}
    </>
  );
}
