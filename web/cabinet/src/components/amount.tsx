import { exactRubles, formatPrice, formatRubles } from "../lib/money";

/**
 * An amount in rubles; the exact microrubles on hover and in the element's machine-readable value.
 * With `price`, a tariff's every digit (formatPrice). With `sign`, the sign is drawn in front of the amount's magnitude (a true minus, never "− -").
 */
export function Amount({ microrub, sign, price }: { microrub: number; sign?: "+" | "−"; price?: boolean }) {
  return (
    <data class="amount" value={String(microrub)} title={exactRubles(microrub)}>
      {sign && microrub !== 0 ? `${sign} ` : ""}
      {(price ? formatPrice : formatRubles)(sign ? Math.abs(microrub) : microrub)}
    </data>
  );
}
