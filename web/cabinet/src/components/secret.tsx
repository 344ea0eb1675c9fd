import type { ComponentChildren } from "preact";
import { CopyButton } from "./copy-button";
import { useT } from "../i18n/locale";

/** A secret (a key, a signing secret, a link) in a line of its own, with a button that copies it. */
export function SecretLine({ id, text, copyLabel }: { id: string; text: string; copyLabel: string }) {
  return (
    <p class="key-line">
      <code id={id} data-testid={id}>
        {text}
      </code>{" "}
      <CopyButton text={text} label={copyLabel} targetId={id} />
    </p>
  );
}

/** A secret shown only this once, until the user says it is saved; `children` say what it is. */
export function ShownOnce({
  headingId,
  title,
  children,
  secretId,
  secret,
  copyLabel,
  onSaved,
}: {
  headingId: string;
  title: ComponentChildren;
  children: ComponentChildren;
  secretId: string;
  secret: string;
  copyLabel: string;
  onSaved: () => void;
}) {
  const t = useT();
  return (
    <section class="secret" aria-labelledby={headingId}>
      <h2 id={headingId}>{title}</h2>
      {children}
      <SecretLine id={secretId} text={secret} copyLabel={copyLabel} />
      <button type="button" class="quiet" onClick={onSaved}>
        {t.secret.saved}
      </button>
    </section>
  );
}
