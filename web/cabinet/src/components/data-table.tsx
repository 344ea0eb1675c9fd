import type { ComponentChildren, VNode } from "preact";
import { useLayoutEffect, useRef } from "preact/hooks";
import { useT } from "../i18n/locale";

/** A column's header: its text, and whether it holds amounts (right-aligned) or only buttons (named for screen readers alone). */
export type Column = string | { label: string; num?: boolean; class?: string; hidden?: boolean };

/** The last column of a table whose rows end in buttons: named "Actions" in the chosen language. */
export const ACTIONS: Column = { label: "", hidden: true, class: "row-actions" };

interface DataTableProps<T> {
  columns: Column[];
  rows: T[];
  /** One `<tr>` (with its key) per row. */
  row: (item: T) => VNode;
  testId?: string;
  class?: string;
  caption?: ComponentChildren;
  /** Said instead of the table when there are no rows; without it an empty table is shown. */
  empty?: ComponentChildren;
  /** Said in the table's one row when there are no rows (the table and its caption stay). */
  emptyRow?: ComponentChildren;
  /** The name of the box the table scrolls in, where it is wider than the screen (its caption's words by default). */
  label?: string;
}

/**
 * A table with a header row, one row per item, and what to say when there is none. Wider than the
 * screen it scrolls in its own box, which then takes keyboard focus (a named region) so it can be
 * scrolled without a mouse; on a phone each row is a card whose cells are labelled with their column's
 * header (styles.css), so a row's buttons are on screen without scrolling.
 */
export function DataTable<T>({ columns, rows, row, testId, class: className, caption, empty, emptyRow, label }: DataTableProps<T>) {
  const t = useT();
  const table = useRef<HTMLTableElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const headers = columns.map((c) => (typeof c === "string" ? c : c === ACTIONS ? t.common.actions : c.label));
  // Each cell carries its column's name for the card layout (a cell spanning the row carries none).
  useLayoutEffect(() => {
    for (const tr of Array.from(table.current?.tBodies[0]?.rows ?? [])) {
      Array.from(tr.cells).forEach((cell, i) => {
        if (cell.colSpan === 1 && headers[i]) cell.dataset.label = headers[i];
      });
    }
  });
  const name = label ?? (typeof caption === "string" ? caption : headers.filter(Boolean).join(", "));
  // Only a box that scrolls is a stop for the keyboard (and a region with a name): one that fits is not.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const mark = () => {
      if (el.scrollWidth > el.clientWidth + 1) {
        el.tabIndex = 0;
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", name);
      } else {
        el.removeAttribute("tabindex");
        el.removeAttribute("role");
        el.removeAttribute("aria-label");
      }
    };
    mark();
    const resized = new ResizeObserver(mark);
    resized.observe(el);
    return () => resized.disconnect();
  });
  if (rows.length === 0 && empty !== undefined) return <p>{empty}</p>;
  return (
    <div class="table-scroll" ref={box}>
      <table data-testid={testId} class={className} ref={table}>
        {caption !== undefined && <caption>{caption}</caption>}
        <thead>
          <tr>{columns.map((c, i) => header(c, headers[i]!, i))}</tr>
        </thead>
        <tbody>
          {rows.length === 0 && emptyRow !== undefined && (
            <tr>
              <td colSpan={columns.length}>{emptyRow}</td>
            </tr>
          )}
          {rows.map(row)}
        </tbody>
      </table>
    </div>
  );
}

function header(c: Column, text: string, i: number) {
  if (typeof c === "string") {
    return (
      <th key={i} scope="col">
        {c}
      </th>
    );
  }
  const className = [c.num ? "num" : undefined, c.class].filter(Boolean).join(" ") || undefined;
  return (
    <th key={i} scope="col" class={className}>
      {c.hidden ? <span class="visually-hidden">{text}</span> : text}
    </th>
  );
}
