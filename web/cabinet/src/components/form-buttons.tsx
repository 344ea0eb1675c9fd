import { useT } from "../i18n/locale";

/** An editor's two buttons: do it (submits the form), or close the editor with nothing saved. */
export function SubmitOrCancel({ label, onCancel }: { label: string; onCancel: () => void }) {
  const t = useT();
  return (
    <div class="buttons">
      <button type="submit" class="primary">
        {label}
      </button>
      <button type="button" onClick={onCancel}>
        {t.common.cancel}
      </button>
    </div>
  );
}
