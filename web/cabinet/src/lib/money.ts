/**
 * Amounts are integer microrubles everywhere (1 ₽ = 1 000 000). They are shown in rubles, rounded to
 * kopecks where that loses nothing a person cares about, and exactly everywhere on hover; all the
 * arithmetic here is on integers, so no amount is ever off by a float's rounding.
 */
export const MICRORUB_PER_RUB = 1_000_000;
const MICRORUB_PER_KOPECK = 10_000;

function currency(fractionDigits: { min: number; max: number }, locale?: string): Intl.NumberFormat {
  return new Intl.NumberFormat(locale, {
    style: "currency",
    currency: "RUB",
    currencyDisplay: "narrowSymbol",
    minimumFractionDigits: fractionDigits.min,
    maximumFractionDigits: fractionDigits.max,
  });
}

/** The exact amount as a decimal string: 1234567 -> "1.234567". */
export function exactRubleDigits(microrub: number): string {
  const sign = microrub < 0 ? "-" : "";
  const abs = Math.abs(microrub);
  return `${sign}${Math.floor(abs / MICRORUB_PER_RUB)}.${String(abs % MICRORUB_PER_RUB).padStart(6, "0")}`;
}

/**
 * For the eye, one precision on every screen: kopecks, rounded half up. A charge that would round to
 * nothing reads "<₽0.01" rather than "₽0.00" (a 4-microruble request is not free); the exact amount is
 * on hover.
 */
export function formatRubles(microrub: number, locale?: string): string {
  const abs = Math.abs(microrub);
  const format = currency({ min: 2, max: 2 }, locale);
  if (abs > 0 && abs < MICRORUB_PER_KOPECK / 2) return `${microrub < 0 ? "−" : ""}<${format.format(0.01)}`;
  const kopecks = Math.sign(microrub) * Math.floor((abs + MICRORUB_PER_KOPECK / 2) / MICRORUB_PER_KOPECK);
  return format.format(kopecks / 100);
}

/**
 * A tariff (a price per unit or per 1,000 tokens), which may well be below a kopeck: every digit it
 * has, at least kopecks. Amounts of money use formatRubles.
 */
export function formatPrice(microrub: number, locale?: string): string {
  return currency({ min: 2, max: 6 }, locale).format(microrub / MICRORUB_PER_RUB);
}

/**
 * A typed amount in rubles ("12", "12.5", "12,50", "1 234.000001") as exact microrubles, or undefined
 * when it is not one: more than six decimals, a sign, letters, or beyond the safe integer range.
 */
export function parseRubles(text: string): number | undefined {
  const compact = text.replace(/[\s\u00a0\u202f_]/g, "").replace(/₽$/, "");
  const m = /^(\d+)(?:[.,](\d{1,6}))?$/.exec(compact);
  if (!m) return undefined;
  const whole = BigInt(m[1]!) * BigInt(MICRORUB_PER_RUB) + BigInt((m[2] ?? "").padEnd(6, "0") || "0");
  return whole <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(whole) : undefined;
}
