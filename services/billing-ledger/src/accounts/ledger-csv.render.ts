import type { CabinetLedgerEntry } from "@meter/contracts";

export const LEDGER_CSV_HEADER = [
  "id",
  "created_at",
  "kind",
  "amount_microrub",
  "amount_rub",
  "balance_after_microrub",
  "reserved_after_microrub",
  "model",
  "operation",
  "key_id",
  "key_name",
  "hold_id",
  "reference",
].join(",");

/** One ledger entry as a CSV line (RFC 4180), amounts exact: microrubles and rubles with six decimals. */
export function ledgerCsvLine(e: CabinetLedgerEntry): string {
  return [
    String(e.id),
    e.created_at,
    e.kind,
    String(e.amount_microrub),
    rubles(e.amount_microrub),
    String(e.balance_after_microrub),
    String(e.reserved_after_microrub),
    text(e.model),
    text(e.operation),
    text(e.key_id),
    text(e.key_name),
    text(e.hold_id),
    text(e.reference),
  ].join(",");
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
