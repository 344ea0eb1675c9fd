import { useState } from "preact/hooks";
import { useT } from "../i18n/locale";

export interface Pages {
  /** Where the shown page starts (the first page has none). */
  cursor: string | undefined;
  /** The shown page's number, from 1. */
  number: number;
  /** Back to the first page (after a filter changes). */
  reset(): void;
  newer(): void;
  older(next: string | null | undefined): void;
}

/** Pages of a list read by cursor: the cursors of the pages before the shown one are kept to go back. */
export function usePages(): Pages {
  const [trail, setTrail] = useState<(string | undefined)[]>([undefined]);
  return {
    cursor: trail.at(-1),
    number: trail.length,
    reset: () => setTrail([undefined]),
    newer: () => setTrail((t) => t.slice(0, -1)),
    older: (next) => {
      if (next) setTrail((t) => [...t, next]);
    },
  };
}

/**
 * Newer / Page n / Older under a list. `next` is where the following page starts; `optional` hides the
 * pager while everything fits on the first page.
 */
export function Pager({
  pages,
  label,
  hasMore,
  next,
  optional,
}: {
  pages: Pages;
  label: string;
  hasMore: boolean;
  next: string | null | undefined;
  optional?: boolean;
}) {
  const t = useT();
  if (optional && pages.number === 1 && !hasMore) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={pages.number < 2} onClick={pages.newer}>
        {t.pager.newer}
      </button>
      <span>{t.pager.page(pages.number)}</span>
      <button type="button" disabled={!hasMore} onClick={() => pages.older(next)}>
        {t.pager.older}
      </button>
    </nav>
  );
}
