import type { ComponentChildren, VNode } from "preact";

/** A column's header: its text, and whether it holds amounts (right-aligned) or only buttons (named for screen readers alone). */
export type Column = string | { label: string; num?: boolean; class?: string; hidden?: boolean };

/** The last column of a table whose rows end in buttons. */
export const ACTIONS: Column = { label: "Actions", hidden: true };

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
  /** Wrapped in a box that scrolls sideways, for tables wider than a phone at any width. */
  scroll?: boolean;
}

/** A table with a header row, one row per item, and what to say when there is none. */
export function DataTable<T>({ columns, rows, row, testId, class: className, caption, empty, emptyRow, scroll }: DataTableProps<T>) {
  if (rows.length === 0 && empty !== undefined) return <p>{empty}</p>;
  const table = (
    <table data-testid={testId} class={className}>
      {caption !== undefined && <caption>{caption}</caption>}
      <thead>
        <tr>{columns.map(header)}</tr>
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
  );
  return scroll ? <div class="table-scroll">{table}</div> : table;
}

function header(c: Column, i: number) {
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
      {c.hidden ? <span class="visually-hidden">{c.label}</span> : c.label}
    </th>
  );
}
