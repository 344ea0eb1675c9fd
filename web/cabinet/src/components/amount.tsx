import { exactRubles, formatRubles } from "../lib/money";

/** An amount in rubles; the exact microrubles on hover and in the element's machine-readable value. */
export function Amount({ microrub, sign }: { microrub: number; sign?: "+" | "−" }) {
  return (
    <data class="amount" value={String(microrub)} title={exactRubles(microrub)}>
      {sign && microrub !== 0 ? `${sign} ` : ""}
      {formatRubles(microrub)}
    </data>
  );
}
