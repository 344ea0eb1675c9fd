import { exactRubles, formatRubles } from "../lib/money";

/**
 * An amount in rubles; the exact microrubles on hover and in the element's machine-readable value.
 * With `sign`, the sign is drawn in front of the amount's magnitude (a true minus, never "− -").
 */
export function Amount({ microrub, sign }: { microrub: number; sign?: "+" | "−" }) {
  return (
    <data class="amount" value={String(microrub)} title={exactRubles(microrub)}>
      {sign && microrub !== 0 ? `${sign} ` : ""}
      {formatRubles(sign ? Math.abs(microrub) : microrub)}
    </data>
  );
}
