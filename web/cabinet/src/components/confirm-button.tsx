import { useState } from "preact/hooks";
import { useT } from "../i18n/locale";

/** A destructive action in two steps, with no modal: the first press asks, the second does it. */
export function ConfirmButton({
  label,
  name,
  confirmLabel,
  onConfirm,
  disabled,
}: {
  label: string;
  /** The accessible name, when the short visible label needs its row to be understood (e.g. "Revoke laptop"). */
  name?: string;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  disabled?: boolean;
}) {
  const t = useT();
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!asking) {
    return (
      <button type="button" class="danger-outline" aria-label={name} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm">
      <button
        type="button"
        class="danger"
        disabled={busy}
        ref={(b) => b?.focus()}
        onClick={() => {
          setBusy(true);
          void onConfirm().finally(() => {
            setBusy(false);
            setAsking(false);
          });
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        {t.common.cancel}
      </button>
    </span>
  );
}
