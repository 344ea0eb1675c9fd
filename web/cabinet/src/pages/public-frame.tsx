import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";

/** The pages before sign-in: one narrow column, its own heading. */
export function PublicFrame({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Meter cabinet`;
  }, [title]);
  return (
    <main id="main" class="narrow">
      <p class="brand">Meter</p>
      <h1>{title}</h1>
      {children}
    </main>
  );
}
