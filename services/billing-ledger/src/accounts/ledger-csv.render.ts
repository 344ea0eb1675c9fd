import type { CabinetLedgerLine } from "@meter/contracts";

export const LEDGER_CSV_HEADER = [
  "id",
  "created_at",
  "resolved_at",
  "kind",
  "status",
  "description",
  "operation",
  "model",
  "key_id",
  "key_name",
  "amount_microrub",
  "amount_rub",
  "reserved_microrub",
  "hold_id",
  "reference",
].join(",");

/**
 * One ledger line as the page shows it (RFC 4180), amounts exact: microrubles and rubles with six
 * decimals, `description` in the page's words.
 */
export function ledgerCsvLine(l: CabinetLedgerLine): string {
  return [
    String(l.id),
    l.created_at,
    l.resolved_at ?? "",
    l.kind,
    l.status,
    text(describeLine(l)),
    text(l.operation),
    text(l.model),
    text(l.key_id),
    text(l.key_name),
    String(l.amount_microrub),
    rubles(l.amount_microrub),
    String(l.reserved_microrub),
    text(l.hold_id),
    text(l.kind === "allowance" ? null : l.reference),
  ].join(",");
}

/** What a line is, in a member's words: the same words as the Ledger page (web/cabinet ledger.tsx). */
export function describeLine(l: Pick<CabinetLedgerLine, "kind" | "operation" | "model">): string {
  if (l.kind === "credit") return "credit";
  if (l.kind === "allowance") return "set aside for this key's next requests, returned within seconds";
  return [l.operation, l.model].filter(Boolean).join(" · ");
}

/** Integer arithmetic only: 1234567 microrub -> "1.234567". */
export function rubles(microrub: number): string {
  const sign = microrub < 0 ? "-" : "";
  const abs = Math.abs(microrub);
  return `${sign}${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, "0")}`;
}

/**
 * Quoted when needed; a cell a spreadsheet would run as a formula (names and references are typed by
 * people) gets a leading apostrophe, OWASP's advice against CSV injection.
 */
export function text(value: string | null): string {
  if (value === null) return "";
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== value ? `"${safe.replace(/"/g, '""')}"` : safe;
}
