import { exactRubleDigits, formatPrice, formatRubles } from "../lib/money";
import { useI18n } from "../i18n/locale";

/**
 * An amount in rubles, in the chosen language's way of writing money; the exact microrubles on hover
 * and in the element's machine-readable value. With `price`, a tariff's every digit (formatPrice).
 * With `sign`, the sign is drawn in front of the amount's magnitude (a true minus, never "− -").
 */
export function Amount({ microrub, sign, price }: { microrub: number; sign?: "+" | "−"; price?: boolean }) {
  const { tag, t } = useI18n();
  return (
    <data class="amount" value={String(microrub)} title={t.money.exact(exactRubleDigits(microrub), new Intl.NumberFormat(tag).format(microrub))}>
      {sign && microrub !== 0 ? `${sign} ` : ""}
      {(price ? formatPrice : formatRubles)(sign ? Math.abs(microrub) : microrub, tag)}
    </data>
  );
}
