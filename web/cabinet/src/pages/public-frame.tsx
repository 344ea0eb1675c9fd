import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { LanguageSwitch } from "../components/layout";
import { useT } from "../i18n/locale";

/** The pages before sign-in: one narrow column, its own heading, and the language. */
export function PublicFrame({ title, children }: { title: string; children: ComponentChildren }) {
  const t = useT();
  useEffect(() => {
    document.title = t.layout.pageTitle(title);
  }, [title]);
  return (
    <main id="main" class="narrow">
      <div class="public-top">
        <p class="brand">Meter</p>
        <LanguageSwitch />
      </div>
      <h1>{title}</h1>
      {children}
    </main>
  );
}
