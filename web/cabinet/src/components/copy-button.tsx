import { useState } from "preact/hooks";
import { useT } from "../i18n/locale";

/** Copies `text` to the clipboard; where the browser refuses, the text is selected for Ctrl+C instead. */
export function CopyButton({ text, label, targetId }: { text: string; label?: string; targetId?: string }) {
  const t = useT();
  const [state, setState] = useState<"idle" | "copied" | "select">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      const target = targetId ? document.getElementById(targetId) : null;
      if (target) window.getSelection()?.selectAllChildren(target);
      setState("select");
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={() => void copy()}>
        {label ?? t.secret.copy}
      </button>
      <span role="status" class="copy-status">
        {state === "copied" ? t.secret.copied : state === "select" ? t.secret.selected : ""}
      </span>
    </span>
  );
}
